#!/usr/bin/env bash
# Keeps the docs true to the tree; fails naming file:line and what is wrong:
#   - a repository path (one under a top-level directory of this repository:
#     src/, include/, tests/, docs/, ...) named in docs/*.md, README.md or a
#     code comment that does not exist. Globs and placeholders are allowed:
#     a path holding * ? < > { } [ ] $ or "..." is not checked, nor one with
#     an upper-case word for a directory (bench/COUNTxSIZE/0). A test binary
#     may be named by its source without ".cc" (tests/admin_test). Other
#     projects' paths are told apart by a second component that this tree
#     lacks under include/, python/ and docs/ (include/infiniband/verbs.h,
#     python/sglang/..., docs/source/... of LMCache);
#   - a relative Markdown link, in any tracked .md file, whose target does not
#     exist (anchors are not checked);
#   - a server config field (section.field, from the ReadMap tables of
#     src/config/server_config.cc) that docs/configuration.md does not name;
#   - a Prometheus metric (a quoted "memkv_..." name in the server's and the
#     client's metric code) that docs/metrics.md does not name, and a metric
#     listed in a table of docs/metrics.md that no such code quotes (the
#     unit tests beside each table compare types and labels too);
#   - a copy of scripts/check-layers.sh's rule table in docs/organization.md
#     (between the "check-layers rules" markers) that differs from the script;
#   - a `memkv COMMAND` (or `memkv admin|drive ACTION`) run in a docs code
#     block or code span that the dispatcher does not know (kCommands of
#     src/cli/commands.h): a command at the start of a line (after a "$ "
#     prompt, sudo, VAR=value assignments) or after &&, ||, | or $( ; an
#     error message ("memkv put: ...") is not a command;
#   - in those same examples, a signal sent by process name (`kill -HUP
#     $(pidof memkv)`, killall memkv, pkill memkv), which reaches every memkv
#     server on the host, and an events socket of a config example
#     (publish, replay, events_publish, events_replay) bound on every
#     interface (tcp://*, tcp://0.0.0.0, tcp://[::]): those sockets take no
#     credential;
#   - the organization map (the first code block of docs/organization.md)
#     missing a top-level directory of the repository or a directory of src/;
#   - under deploy/ (the container image and the Kubernetes manifests): the
#     repository paths of their comments (as above, Containerfile included);
#     a kustomization's resources, components and patches that do not exist
#     beside it; and a `memkv` command they run (a shell line, or an exec
#     array such as ["memkv", "admin", "status", ...] and the Containerfile's
#     CMD after ENTRYPOINT ["memkv", "start"]) that is not a command, or an
#     option that is not one of that command's (its OptionTable in
#     src/cli/commands.h).
# Reads git's list of tracked files, so it runs from a checkout.
#
#   scripts/check-docs.sh --commands [FILE.md...]
# runs only the check of memkv commands, on FILEs (default: docs/*.md and
# README.md); tests/cli_docs_commands_test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

exec python3 - "$@" <<'EOF'
import os
import re
import subprocess
import sys

only_commands = len(sys.argv) > 1 and sys.argv[1] == "--commands"
command_files = sys.argv[2:] if only_commands else None

files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       check=True, capture_output=True).stdout.decode().split("\0")
files = [f for f in files if f and os.path.exists(f)]
problems = []

def fail(path, line, what):
    problems.append(f"check-docs: {path}:{line}: {what}")

def check_tree():
    # --- repository paths -------------------------------------------------------
    TOP = ["src", "include", "tests", "docs", "scripts", "python", "bench", "fuzz", "packaging", "cmake", "deploy"]
    # A path starts at a word boundary that is not part of a longer path
    # (/usr/src/..., $M/src/..., build/src/...) and runs over path characters.
    PATH_RE = re.compile(r"(?<![\w./$~-])((?:%s)/[\w.*?<>{}\[\]$,/+-]*)" % "|".join(TOP))
    FOREIGN_TOP = {"include", "python", "docs"}
    PLACEHOLDER = re.compile(r"[*?<>{}\[\]$]|\.\.\.|XXX")

    def check_paths(path, lineno, text):
        for m in PATH_RE.finditer(text):
            token = m.group(1)
            if PLACEHOLDER.search(token):
                continue
            token = token.rstrip(".,:;'\")`")
            if os.path.exists(token) or os.path.exists(token.rstrip("/")) or os.path.exists(token + ".cc"):
                continue
            parts = token.split("/")
            if any(re.search(r"[A-Z]{2,}", part) for part in parts[1:-1]):
                continue  # a placeholder directory: bench/COUNTxSIZE/0
            if parts[0] in FOREIGN_TOP and len(parts) > 2 and not os.path.exists("/".join(parts[:2])):
                continue  # another project's include/, python/ or docs/
            fail(path, lineno, f"names '{token}', which does not exist")

    CODE_EXT = (".h", ".cc", ".c", ".cpp", ".inc", ".py", ".sh", ".cmake", ".txt", ".toml", ".yaml", ".yml", ".map")
    # Files without an extension whose comments start with '#'.
    CODE_NAMES = ("CMakeLists.txt", "Containerfile", "Dockerfile")

    def comment_text(path, line):
        """The comment part of one source line ('' when there is none)."""
        stripped = line.lstrip()
        if path.endswith((".h", ".cc", ".c", ".cpp", ".inc", ".map")):
            if stripped.startswith(("/*", "*")):
                return stripped
            i = line.find("//")
            return line[i:] if i >= 0 else ""
        i = line.find("#")
        if i < 0:
            return ""
        if path.endswith(".sh") and i > 0 and line[i - 1] in "${":
            return ""  # ${#var}, $#
        return line[i:]

    for path in files:
        if path.endswith(".md"):
            if not (path.startswith("docs/") or path == "README.md"):
                continue
            for lineno, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                check_paths(path, lineno, line)
        elif path.endswith(CODE_EXT) or os.path.basename(path) in CODE_NAMES:
            if path.startswith(("fuzz/corpus/", "tests/fixtures/")) or "/testdata/" in path or "/fixtures/" in path:
                continue
            for lineno, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                text = comment_text(path, line)
                if text:
                    check_paths(path, lineno, text)

    # --- relative Markdown links ------------------------------------------------
    LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
    for path in files:
        if not path.endswith(".md"):
            continue
        in_fence = False
        for lineno, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            for m in LINK_RE.finditer(re.sub(r"`[^`]*`", "", line)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # http:, mailto:, an anchor in this page
                file_part = target.split("#", 1)[0]
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(resolved):
                    fail(path, lineno, f"links to '{target}', but {resolved} does not exist")

    # --- server config fields ---------------------------------------------------
    config_doc = open("docs/configuration.md", encoding="utf-8").read()
    # The sections read in a file of their own (events_config.cc) count too.
    for config_src in ("src/config/server_config.cc", "src/config/events_config.cc"):
        text = open(config_src, encoding="utf-8").read()
        # ReadMap(node, "section", {{"name", reader}, XxxField("name", ...), ...}, d);
        for m in re.finditer(r'ReadMap\(\s*\w+,\s*"([a-z_]+)",\s*\{(.*?)\},\s*d\);', text, re.S):
            section, body = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            names = re.findall(r'\{\s*"([a-z_]+)"\s*,', body) + re.findall(r'\w+Field\(\s*"([a-z_]+)"', body)
            for name in names:
                field = f"{section}.{name}"
                if not re.search(r"(?<![\w.])%s(?![\w])" % re.escape(field), config_doc):
                    fail(config_src, line, f"server config field '{field}' is missing from docs/configuration.md")

    # --- metrics ----------------------------------------------------------------
    metrics_doc = open("docs/metrics.md", encoding="utf-8").read()
    seen = set()
    for path in files:
        if not path.endswith((".cc", ".h")) or path.endswith("_test.cc"):
            continue
        if not (path.startswith("src/server/") or path.startswith("src/client/") or path.startswith("src/metrics/")):
            continue
        for lineno, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
            for name in re.findall(r'"(memkv_[a-z0-9_]+)"', line):
                if name in seen:
                    continue
                seen.add(name)
                if not re.search(r"(?<![\w])%s(?![\w])" % re.escape(name), metrics_doc):
                    fail(path, lineno, f"metric '{name}' is missing from docs/metrics.md")
    # ...and the other way: a family listed in a table of docs/metrics.md
    # (a row whose first cell names `memkv_...`) that no metric code quotes.
    for lineno, line in enumerate(metrics_doc.split("\n"), 1):
        if not line.startswith("| `memkv_"):
            continue
        for name in re.findall(r"`(memkv_[a-z0-9_]+)`", line.split("|")[1]):
            if name not in seen:
                fail("docs/metrics.md", lineno, f"metric '{name}' is listed but no metric code in src/ exports it")

    # --- the layer rules' copy ---------------------------------------------------
    rules = re.findall(r'^\s*\[(\w+)\]="([^"]*)"', open("scripts/check-layers.sh", encoding="utf-8").read(), re.M)
    org = "docs/organization.md"
    lines = open(org, encoding="utf-8").read().split("\n")
    try:
        begin = lines.index("<!-- check-layers rules: begin -->")
        end = lines.index("<!-- check-layers rules: end -->")
        copied = []
        for i in range(begin + 1, end):
            m = re.match(r"^\|\s*(\w+)\s*\|\s*([\w ]+?)\s*\|$", lines[i])
            if m and m.group(1) != "layer":
                copied.append((m.group(1), " ".join(m.group(2).split()), i + 1))
        script = {layer: " ".join(deps.split()) for layer, deps in rules}
        doc = {layer: deps for layer, deps, _ in copied}
        for layer, deps, line in copied:
            if layer not in script:
                fail(org, line, f"layer '{layer}' is not in scripts/check-layers.sh")
            elif script[layer] != deps:
                fail(org, line, f"layer '{layer}' may include '{deps}' here but '{script[layer]}' in scripts/check-layers.sh")
        for layer in script:
            if layer not in doc:
                fail(org, begin + 1, f"layer '{layer}' of scripts/check-layers.sh is missing from the table")
    except ValueError:
        fail(org, 1, "no '<!-- check-layers rules: begin/end -->' table")

    # --- the organization map ----------------------------------------------------
    # Its entries: the first word of each line of the first code block that
    # ends in '/' ("src/base/", "deploy/").
    org_text = open(org, encoding="utf-8").read()
    fence = re.search(r"^```\n(.*?)^```", org_text, re.S | re.M)
    mapped = set(re.findall(r"^(\S+/)\s", fence.group(1) if fence else "", re.M))
    tops = sorted({f.split("/", 1)[0] for f in files if "/" in f and not f.startswith(".")})
    srcs = sorted({"src/" + f.split("/")[1] for f in files if f.startswith("src/") and f.count("/") >= 2})
    for d in tops + srcs:
        if not any(m == d + "/" or (d in tops and m.startswith(d + "/")) for m in mapped):
            fail(org, 1, f"the organization map (the first code block) has no entry '{d}/'")

    check_deploy()


def option_tables():
    """kCommands of src/cli/commands.h: name -> (actions, options)."""
    text = open("src/cli/commands.h", encoding="utf-8").read()
    tables = {}
    for name, body in re.findall(r"inline const OptionTable (\w+)\{(.*?)\};", text, re.S):
        tables[name] = set(re.findall(r'"(-[\w-]+)"', body))
    out = {}
    for name, actions, table in re.findall(r'\{"([\w-]+)",\s*\{([^}]*)\},\s*(k\w+)\}', text):
        out[name] = (set(re.findall(r'"([\w-]+)"', actions)), tables.get(table, set()) | {"-h", "--help"})
    return out


def check_deploy():
    deploy = [f for f in files if f.startswith("deploy/")]
    # A kustomization's resources, components and patches exist beside it.
    for path in deploy:
        if os.path.basename(path) != "kustomization.yaml":
            continue
        key = None
        for lineno, line in enumerate(open(path, encoding="utf-8"), 1):
            m = re.match(r"^(\w+):\s*$", line)
            if m:
                key = m.group(1)
                continue
            if re.match(r"^\S", line):
                key = None
            m = re.match(r"^\s*-\s+(?:path:\s*)?(\S+)\s*$", line)
            if m and key in ("resources", "components", "patches", "patchesStrategicMerge"):
                target = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
                if not os.path.exists(target):
                    fail(path, lineno, f"{key} names '{m.group(1)}', but {target} does not exist")

    # memkv commands and their options.
    commands = option_tables()

    def check_run(path, lineno, words):
        # words: ["memkv", COMMAND, ...] up to the end of that command.
        if len(words) < 2:
            return
        words = [w.strip("'\"") for w in words]
        command = words[1]
        if command in ("--version", "-V", "--help", "-h"):
            return
        if command not in commands:
            fail(path, lineno, f"runs 'memkv {command}', which is not a memkv command; the commands are: "
                 + ", ".join(sorted(commands)))
            return
        actions, options = commands[command]
        rest = words[2:]
        if actions:
            if not rest or rest[0] not in actions:
                fail(path, lineno, f"runs 'memkv {command}' without one of its actions ({', '.join(sorted(actions))})")
                return
            rest = rest[1:]
        for w in rest:
            if w == "--":
                break
            if w.startswith("-") and len(w) > 1 and not re.match(r"^-\d", w):
                name = w.split("=", 1)[0]
                if name not in options:
                    fail(path, lineno, f"runs 'memkv {command}' with '{name}', which is not one of its options: "
                         + ", ".join(sorted(o for o in options if o.startswith("--"))))

    SHELL_RUN = re.compile(r"(?:^|&&|\|\||\||\$\(|;|^\s*-\s+)\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*memkv[ \t]+([^;&|)#]*)")
    ARRAY = re.compile(r'\[\s*("(?:[^"\\]|\\.)*"(?:\s*,\s*"(?:[^"\\]|\\.)*")*)\s*\]')
    for path in deploy:
        entrypoint = None
        for lineno, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
            stripped = line.strip()
            if stripped.startswith("#"):
                continue
            for m in ARRAY.finditer(line):
                words = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))
                if words and words[0] == "memkv":
                    check_run(path, lineno, words)
                    if re.match(r"^ENTRYPOINT\b", stripped):
                        entrypoint = words
                elif entrypoint and re.match(r"^CMD\b", stripped):
                    check_run(path, lineno, entrypoint + words)
            if ARRAY.search(line):
                continue
            for m in SHELL_RUN.finditer(line):
                check_run(path, lineno, ["memkv"] + m.group(1).split())


if not only_commands:
    check_tree()

# --- memkv commands in examples -----------------------------------------------
commands_src = open("src/cli/commands.h", encoding="utf-8").read()
commands = {name: set(re.findall(r'"([\w-]+)"', actions))
            for name, actions in re.findall(r'\{"([\w-]+)",\s*\{([^}]*)\},\s*k\w+\}', commands_src)}
if not commands:
    fail("src/cli/commands.h", 1, "no command found in kCommands")
# Code spans that begin with these are labels, not commands.
NOT_COMMANDS = {"memkv key check", "memkv drive value"}  # HKDF/HMAC labels (docs/storage.md)
RUN_RE = re.compile(r"(?:^|&&|\|\||\||\$\()\s*(?:\$\s+)?(?:sudo\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*"
                    r"(?:[\w./-]*/)?memkv[ \t]+([a-z][\w-]*)(?![\w-])(?!:| [\w-]+:)(?:[ \t]+([a-z][\w-]*)(?![\w-]))?")
SIGNAL_BY_NAME_RE = re.compile(r"\b(?:pidof|killall|pkill)\b[^`]*\bmemkv\b")
EVENTS_EVERYWHERE_RE = re.compile(r"^\s*(?:-\s+)?(publish|replay|events_publish|events_replay):\s*[\"']?"
                                  r"(tcp://(?:\*|0\.0\.0\.0|\[::\]):\S*)")
docs = command_files or [f for f in files if f.endswith(".md") and (f.startswith("docs/") or f == "README.md")]
for path in docs:
    in_fence = False
    for lineno, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        texts = [line] if in_fence else re.findall(r"`([^`]+)`", line)
        if in_fence and (m := EVENTS_EVERYWHERE_RE.match(line)):
            fail(path, lineno, f"'{m.group(1)}: {m.group(2).rstrip(chr(34) + chr(39))}' binds an events socket on every "
                 "interface, and events sockets take no credential; name an address of this host that the routers "
                 "reach (tcp://10.0.0.5:5557)")
        for text in texts:
            if SIGNAL_BY_NAME_RE.search(text):
                fail(path, lineno, "signals memkv by process name, which reaches every memkv server on the host; "
                     "name one server: 'memkv admin reload --server ADDR', or the pid of that one process")
            if text.strip().startswith(tuple(NOT_COMMANDS)):
                continue
            for m in RUN_RE.finditer(text):
                command, action = m.group(1), m.group(2)
                if command not in commands:
                    fail(path, lineno, f"'memkv {command}' is not a memkv command; the commands are: "
                         + ", ".join(sorted(commands)))
                elif commands[command] and action is not None and action not in commands[command]:
                    fail(path, lineno, f"'memkv {command} {action}' is not an action of memkv {command}; "
                         f"allowed: {', '.join(sorted(commands[command]))}")

for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
