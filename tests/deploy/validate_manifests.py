"""Validates the rendered MemKV Kubernetes manifests (deploy/kubernetes/).

Each object: a known kind and apiVersion; deserialized through the
python3-kubernetes model of its kind (required fields, types), and walked
against the models' attribute maps so that an unknown field anywhere (a
typo the models would silently drop) is an error. The ServiceMonitor (a
Prometheus Operator CRD, no model) is checked against the fields it may use.

Then what ties the objects together: the headless Service and the
StatefulSet (serviceName, selector, named ports, probes on the admin port),
the PodDisruptionBudget, the ConfigMap's server config (parsed by the real
memkv binary when MEMKV_BINARY names one), the pod's volumes and claims
against the config's drives, hugepages against the pinned pool, and the
client example against the servers (Service, port, Secret).

Usage: python3 validate_manifests.py DEPLOY_KUBERNETES_DIR
Prints one line per problem and exits 1 when there is any.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kustomize_lite  # noqa: E402

try:
    import kubernetes.client
    from kubernetes.client import models as k8s_models
except ImportError:  # pragma: no cover - reported by the caller
    kubernetes = None
    k8s_models = None

# (apiVersion, kind) -> python3-kubernetes model, or a dict schema for CRDs.
MODELS = {
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("v1", "Service"): "V1Service",
    ("apps/v1", "StatefulSet"): "V1StatefulSet",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
}

# The ServiceMonitor fields MemKV's component may use (monitoring.coreos.com/v1).
SERVICE_MONITOR = {
    "apiVersion": str, "kind": str,
    "metadata": "V1ObjectMeta",
    "spec": {
        "selector": "V1LabelSelector",
        "namespaceSelector": {"any": bool, "matchNames": [str]},
        "jobLabel": str,
        "endpoints": [{"port": str, "path": str, "interval": str, "scrapeTimeout": str,
                       "scheme": str, "honorLabels": bool}],
    },
}

QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
QTY_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
             "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50}

SERVER_PORT = 9900
ADMIN_PORT = 9901


def quantity_bytes(q):
    m = re.match(r"^([0-9]+)([A-Za-z]*)$", str(q))
    if not m or m.group(2) not in QTY_UNITS:
        return None
    return int(m.group(1)) * QTY_UNITS[m.group(2)]


def size_bytes(text):
    m = re.match(r"^\s*([0-9]+)\s*([KMGT]iB|B)?\s*$", str(text))
    if not m:
        return None
    return int(m.group(1)) * SIZE_UNITS[m.group(2) or "B"]


class Problems:
    def __init__(self):
        self.items = []
        self.notes = []
        self.config_checks = 0  # configs the memkv binary was run on

    def add(self, where, what):
        self.items.append(f"{where}: {what}")

    def note(self, what):
        self.notes.append(what)


# --- schema ---------------------------------------------------------------

def _check_type(value, type_str, path, problems):
    """Walks value against a python3-kubernetes openapi type string."""
    if value is None:
        return
    if type_str.startswith("list["):
        if not isinstance(value, list):
            problems.add(path, f"expected a list, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            _check_type(item, type_str[5:-1], f"{path}[{i}]", problems)
        return
    if type_str.startswith("dict("):
        if not isinstance(value, dict):
            problems.add(path, f"expected a map, got {type(value).__name__}")
            return
        inner = type_str[5:-1].split(", ", 1)[1]
        for k, v in value.items():
            if inner == "str" and isinstance(v, (int, float)) and not isinstance(v, bool) \
                    and re.search(r"\.(limits|requests|capacity|allocatable)$", path):
                if not QUANTITY.match(str(v)):
                    problems.add(f"{path}.{k}", f"{v!r} is not a quantity")
                continue  # quantities may be YAML numbers
            _check_type(v, inner, f"{path}.{k}", problems)
        return
    if type_str == "str":
        if not isinstance(value, str):
            problems.add(path, f"expected a string, got {type(value).__name__} {value!r}")
        return
    if type_str == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            problems.add(path, f"expected an integer, got {type(value).__name__} {value!r}")
        return
    if type_str == "bool":
        if not isinstance(value, bool):
            problems.add(path, f"expected true or false, got {value!r}")
        return
    if type_str in ("object", "datetime", "date", "float"):
        return
    model = getattr(k8s_models, type_str, None)
    if model is None:
        problems.add(path, f"no model {type_str} in python3-kubernetes")
        return
    if not isinstance(value, dict):
        problems.add(path, f"expected a {type_str} map, got {type(value).__name__}")
        return
    fields = {json_key: model.openapi_types[attr] for attr, json_key in model.attribute_map.items()}
    for k, v in value.items():
        if k not in fields:
            problems.add(f"{path}.{k}", f"unknown field in {type_str}; allowed: {', '.join(sorted(fields))}")
            continue
        _check_type(v, fields[k], f"{path}.{k}", problems)


def _check_crd(value, schema, path, problems):
    if isinstance(schema, str):
        _check_type(value, schema, path, problems)
    elif isinstance(schema, dict):
        if not isinstance(value, dict):
            problems.add(path, f"expected a map, got {type(value).__name__}")
            return
        for k, v in value.items():
            if k not in schema:
                problems.add(f"{path}.{k}", f"unknown field; allowed: {', '.join(sorted(schema))}")
            else:
                _check_crd(v, schema[k], f"{path}.{k}", problems)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            problems.add(path, f"expected a list, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            _check_crd(item, schema[0], f"{path}[{i}]", problems)
    elif not isinstance(value, schema) or (schema is int and isinstance(value, bool)):
        problems.add(path, f"expected {schema.__name__}, got {value!r}")


class _Response:
    def __init__(self, obj):
        self.data = json.dumps(obj)


def check_schema(obj, where, problems):
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key == ("monitoring.coreos.com/v1", "ServiceMonitor"):
        _check_crd(obj, SERVICE_MONITOR, where, problems)
        return
    if key not in MODELS:
        known = ", ".join(f"{k} {a}" for a, k in sorted(MODELS) + [("monitoring.coreos.com/v1", "ServiceMonitor")])
        problems.add(where, f"unknown kind/apiVersion {key[1]} {key[0]}; known: {known}")
        return
    model = MODELS[key]
    try:
        kubernetes.client.ApiClient().deserialize(_Response(obj), model)
    except (ValueError, TypeError) as e:
        problems.add(where, f"does not deserialize as {model}: {e}")
    _check_type(obj, model, where, problems)
    meta = obj.get("metadata") or {}
    if not meta.get("name"):
        problems.add(where, "metadata.name is missing")


# --- consistency ----------------------------------------------------------

def _one(objs, kind, where, problems, name=None):
    found = [o for o in objs if o.get("kind") == kind and (name is None or o["metadata"].get("name") == name)]
    if len(found) != 1:
        problems.add(where, f"expected exactly one {kind}{' ' + name if name else ''}, found {len(found)}")
        return None
    return found[0]


def _selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _port_ref(port, container):
    """The container port number a probe's or Service's port (name or number) means."""
    for p in container.get("ports") or []:
        if port == p.get("name") or port == p.get("containerPort"):
            return p.get("containerPort")
    return None


def check_config_with_binary(config_text, where, problems, binary):
    if not binary:
        problems.note(f"{where}: MEMKV_BINARY not set: the server config was parsed as YAML only")
        return
    with tempfile.TemporaryDirectory(prefix="memkv-deploy-") as tmp:
        path = os.path.join(tmp, "config.yaml")
        with open(path, "w") as f:
            f.write(config_text)
        r = subprocess.run([binary, "start", "--check", "--config", path, "--data-dir", os.path.join(tmp, "data")],
                           capture_output=True, text=True, timeout=60)
        problems.config_checks += 1
        out = (r.stdout + r.stderr).strip()
        if "invalid configuration" in out or r.returncode == 2:
            problems.add(where, f"memkv start --check rejects the config (exit {r.returncode}): {out}")
        elif r.returncode != 0:
            # The rules passed; what is left are this host's pre-flight
            # checks (drive space, block devices, hugepages), which the
            # cluster's nodes answer, not this machine.
            problems.note(f"{where}: config rules pass; host pre-flight here: "
                          + " | ".join(line for line in out.splitlines() if line.strip()))


def check_server(objs, where, problems, binary=None):
    svc = _one(objs, "Service", where, problems, "memkv")
    sts = _one(objs, "StatefulSet", where, problems, "memkv")
    pdb = _one(objs, "PodDisruptionBudget", where, problems)
    cm = _one(objs, "ConfigMap", where, problems, "memkv-config")
    if not (svc and sts and pdb and cm):
        return
    tpl = sts["spec"]["template"]
    labels = (tpl.get("metadata") or {}).get("labels") or {}
    pod = tpl["spec"]
    w = f"{where}: StatefulSet memkv"

    # Service: headless, not-ready pods left out, selects the pods.
    ss = svc["spec"]
    if ss.get("clusterIP") != "None":
        problems.add(f"{where}: Service memkv", f"clusterIP {ss.get('clusterIP')!r}; a headless Service needs None")
    if ss.get("publishNotReadyAddresses", False) is not False:
        problems.add(f"{where}: Service memkv", "publishNotReadyAddresses must be false: clients must not see starting or draining servers")
    if not _selects(ss.get("selector"), labels):
        problems.add(f"{where}: Service memkv", f"selector {ss.get('selector')} does not match the pod labels {labels}")
    if sts["spec"].get("serviceName") != svc["metadata"]["name"]:
        problems.add(w, f"serviceName {sts['spec'].get('serviceName')!r} is not the headless Service {svc['metadata']['name']!r}")
    if not _selects(sts["spec"]["selector"].get("matchLabels"), labels):
        problems.add(w, "spec.selector does not match the pod template's labels")

    containers = {c["name"]: c for c in pod.get("containers") or []}
    c = containers.get("memkv")
    if c is None:
        problems.add(w, f"no container named memkv (found {sorted(containers)})")
        return
    cw = f"{w}: container memkv"
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
    if ports.get("memkv") != SERVER_PORT or ports.get("admin") != ADMIN_PORT:
        problems.add(cw, f"ports {ports}; expected memkv {SERVER_PORT} and admin {ADMIN_PORT} (the data port + 1)")
    sports = {p.get("name"): p for p in ss.get("ports") or []}
    for name, number in (("memkv", SERVER_PORT), ("admin", ADMIN_PORT)):
        p = sports.get(name)
        if p is None:
            problems.add(f"{where}: Service memkv", f"no port named {name} (SRV _{name}._tcp needs it)")
            continue
        if p.get("port") != number or _port_ref(p.get("targetPort", p.get("port")), c) != number:
            problems.add(f"{where}: Service memkv", f"port {name}: {p} does not lead to container port {number}")

    # Probes: on the admin port, the right paths.
    want = {"readinessProbe": "/v1/ready", "livenessProbe": "/v1/health", "startupProbe": "/v1/health"}
    for probe, path in want.items():
        pr = c.get(probe)
        if not pr or "httpGet" not in pr:
            problems.add(cw, f"{probe} must be an httpGet of {path}")
            continue
        hg = pr["httpGet"]
        if hg.get("path") != path:
            problems.add(cw, f"{probe} asks {hg.get('path')!r}; expected {path}")
        if _port_ref(hg.get("port"), c) != ADMIN_PORT:
            problems.add(cw, f"{probe} port {hg.get('port')!r} is not the admin port {ADMIN_PORT}")
    sp = c.get("startupProbe") or {}
    if sp.get("periodSeconds", 10) * sp.get("failureThreshold", 3) < 300:
        problems.add(cw, "startupProbe allows less than 300 s: index loading of a large store takes longer")

    # preStop drains; the grace period covers it plus SIGTERM's flush.
    pre = " ".join((((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command") or [])
    if "memkv admin drain" not in pre:
        problems.add(cw, "lifecycle.preStop must run 'memkv admin drain'")
    sleep = re.search(r"sleep (\d+)", pre)
    grace = pod.get("terminationGracePeriodSeconds", 30)
    if sleep and grace < int(sleep.group(1)) + 30:
        problems.add(w, f"terminationGracePeriodSeconds {grace} < the preStop wait {sleep.group(1)} s + 30 s to stop")

    # Arguments, config and data volumes.
    args = c.get("args") or []
    def arg(name):
        return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None
    config_path, data_dir = arg("--config"), arg("--data-dir")
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts") or []}
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    claims = {t["metadata"]["name"]: t for t in sts["spec"].get("volumeClaimTemplates") or []}
    if not config_path or not data_dir:
        problems.add(cw, f"args {args} must give --config and --data-dir")
        return
    cmount = mounts.get(os.path.dirname(config_path))
    cvol = volumes.get(cmount["name"]) if cmount else None
    if not cvol or (cvol.get("configMap") or {}).get("name") != cm["metadata"]["name"]:
        problems.add(cw, f"--config {config_path} is not a file of the ConfigMap {cm['metadata']['name']}")
    dmount = mounts.get(data_dir)
    if not dmount or dmount["name"] not in claims:
        problems.add(cw, f"--data-dir {data_dir} is not a volumeClaimTemplate's mount: the identity would not survive rescheduling")
    auth_init = [i for i in pod.get("initContainers") or [] if "auth.key" in " ".join(i.get("command") or [])]
    secret_vols = [v for v in volumes.values() if "secret" in v]
    if not auth_init or not secret_vols:
        problems.add(w, "no init container copying the Secret's key to auth.key")
    for init in pod.get("initContainers") or []:
        if init.get("image") != c.get("image"):
            problems.add(w, f"init container {init['name']} runs {init.get('image')!r}, the server {c.get('image')!r}")

    # The server config.
    text = (cm.get("data") or {}).get(os.path.basename(config_path))
    if text is None:
        problems.add(f"{where}: ConfigMap memkv-config", f"no key {os.path.basename(config_path)}")
        return
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        problems.add(f"{where}: ConfigMap memkv-config", f"config.yaml is not YAML: {e}")
        return
    check_config_with_binary(text, f"{where}: ConfigMap memkv-config", problems, binary)
    address = str((config.get("network") or {}).get("address", ""))
    if not address.endswith(f":{SERVER_PORT}") or address.startswith("127."):
        problems.add(f"{where}: ConfigMap memkv-config", f"network.address {address!r} must serve the pod's address on port {SERVER_PORT} (0.0.0.0:{SERVER_PORT})")
    storage = config.get("storage") or {}
    drives = [d.get("media") for d in storage.get("drives") or []]
    mode = storage.get("mode")
    res = c.get("resources") or {}
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    pool = size_bytes((config.get("memory") or {}).get("max_size", "0"))
    hp = quantity_bytes(limits.get("hugepages-2Mi", 0))
    if requests.get("hugepages-2Mi", limits.get("hugepages-2Mi")) != limits.get("hugepages-2Mi"):
        problems.add(cw, "hugepages-2Mi requests and limits must be equal")
    rdma = any(k.startswith("rdma/") for k in limits)
    pinned = mode == "direct" or rdma
    if pinned and (hp or 0) < (pool or 0):
        problems.add(cw, f"the pinned pool (memory.max_size {pool} B) needs hugepages-2Mi of at least that much; limit {limits.get('hugepages-2Mi')}")
    if not pinned:
        mem = quantity_bytes(limits.get("memory", 0)) or 0
        if pool and mem <= pool:
            problems.add(cw, f"memory limit {limits.get('memory')} does not exceed the DRAM pool ({pool} B)")
    if rdma and "IPC_LOCK" not in (((c.get("securityContext") or {}).get("capabilities") or {}).get("add") or []):
        problems.add(cw, "RDMA registers the pool: add the IPC_LOCK capability")
    devices = {d["devicePath"]: d["name"] for d in c.get("volumeDevices") or []}
    if mode == "direct":
        for media in drives:
            name = devices.get(media)
            if name is None:
                problems.add(cw, f"direct drive {media} is not one of the volumeDevices {sorted(devices)}")
            elif (claims.get(name, {}).get("spec") or {}).get("volumeMode") != "Block":
                problems.add(w, f"volumeClaimTemplate {name} of {media} must have volumeMode: Block")
        fmt = [i for i in pod.get("initContainers") or [] if "memkv setup" in " ".join(i.get("command") or [])]
        if not fmt:
            problems.add(w, "direct mode needs an init container formatting the drives (memkv setup --idempotent)")
        for i in fmt:
            cmd = " ".join(i.get("command") or [])
            if "--idempotent" not in cmd or any(m not in cmd for m in drives):
                problems.add(w, f"init container {i['name']} must run memkv setup --idempotent on every drive {drives}")
    elif mode == "file":
        total = 0
        for d in storage.get("drives") or []:
            if not str(d.get("media", "")).startswith(data_dir.rstrip("/") + "/"):
                problems.add(f"{where}: ConfigMap memkv-config", f"drive {d.get('media')} is not on the data volume {data_dir}")
            total += size_bytes(d.get("size", "4 GiB")) or 0
        claim = quantity_bytes(((claims.get(dmount["name"] if dmount else "", {}).get("spec") or {})
                                .get("resources") or {}).get("requests", {}).get("storage", 0)) or 0
        if total >= claim:
            problems.add(w, f"the drive files ({total} B) do not fit the data claim ({claim} B)")

    # PodDisruptionBudget.
    if pdb["spec"].get("maxUnavailable") != 1:
        problems.add(f"{where}: PodDisruptionBudget", f"maxUnavailable {pdb['spec'].get('maxUnavailable')!r}; expected 1")
    if not _selects((pdb["spec"].get("selector") or {}).get("matchLabels"), labels):
        problems.add(f"{where}: PodDisruptionBudget", "selector does not match the server pods")

    # ServiceMonitor, when present.
    for sm in [o for o in objs if o.get("kind") == "ServiceMonitor"]:
        if not _selects(sm["spec"]["selector"].get("matchLabels"), svc["metadata"].get("labels") or {}):
            problems.add(f"{where}: ServiceMonitor", "selector does not match the Service memkv's labels")
        for e in sm["spec"].get("endpoints") or []:
            if e.get("port") not in sports or sports[e["port"]].get("port") != ADMIN_PORT or e.get("path") != "/metrics":
                problems.add(f"{where}: ServiceMonitor", f"endpoint {e} must scrape the admin port's /metrics")


def check_client(client_objs, server_objs, where, problems):
    svc = _one(server_objs, "Service", where, problems, "memkv")
    sts = _one(server_objs, "StatefulSet", where, problems, "memkv")
    dep = _one(client_objs, "Deployment", where, problems)
    if not (svc and sts and dep):
        return
    secrets = [(v["secret"]["secretName"], i["key"]) for v in sts["spec"]["template"]["spec"].get("volumes") or []
               if "secret" in v for i in v["secret"].get("items") or []]
    cms = {o["metadata"]["name"]: o.get("data") or {} for o in client_objs if o.get("kind") == "ConfigMap"}
    for c in dep["spec"]["template"]["spec"]["containers"]:
        cw = f"{where}: Deployment {dep['metadata']['name']}: container {c['name']}"
        env = {}
        for ef in c.get("envFrom") or []:
            name = (ef.get("configMapRef") or {}).get("name")
            if name not in cms:
                problems.add(cw, f"envFrom names ConfigMap {name!r}, which the example does not define")
            env.update(cms.get(name, {}))
        env.update({e["name"]: e for e in c.get("env") or []})
        servers = env.get("MEMKV_SERVERS", {})
        value = servers.get("value", "") if isinstance(servers, dict) else servers
        m = re.match(r"^dns:([^.]+)\.\$\(POD_NAMESPACE\)\.svc\.cluster\.local:(\d+)$", value) or \
            re.match(r"^srv:([^.]+)\.\$\(POD_NAMESPACE\)\.svc\.cluster\.local()$", value)
        if not m:
            problems.add(cw, f"MEMKV_SERVERS {value!r} is not dns:SERVICE.$(POD_NAMESPACE).svc.cluster.local:PORT or srv:SERVICE...")
        else:
            if m.group(1) != svc["metadata"]["name"]:
                problems.add(cw, f"MEMKV_SERVERS names Service {m.group(1)!r}; the servers' is {svc['metadata']['name']!r}")
            if m.group(2) and int(m.group(2)) != SERVER_PORT:
                problems.add(cw, f"MEMKV_SERVERS port {m.group(2)}; the Service's memkv port is {SERVER_PORT}")
        if "$(POD_NAMESPACE)" in value:
            names = [e["name"] for e in c.get("env") or []]
            if "POD_NAMESPACE" not in names or names.index("POD_NAMESPACE") > names.index("MEMKV_SERVERS"):
                problems.add(cw, "POD_NAMESPACE must be defined before MEMKV_SERVERS, which refers to it")
        key = env.get("MEMKV_AUTH_KEY")
        ref = ((key or {}).get("valueFrom") or {}).get("secretKeyRef") if isinstance(key, dict) else None
        if not ref or (ref.get("name"), ref.get("key")) not in secrets:
            problems.add(cw, f"MEMKV_AUTH_KEY must come from the servers' Secret {secrets}; got {key!r}")
        transport = env.get("MEMKV_TRANSPORT")
        if transport not in ("auto", "tcp", "rdma"):
            problems.add(cw, f"MEMKV_TRANSPORT {transport!r}; allowed: auto, tcp, rdma")
        interval = env.get("MEMKV_DISCOVERY_INTERVAL_MS")
        if not (isinstance(interval, str) and interval.isdigit() and int(interval) > 0):
            problems.add(cw, f"MEMKV_DISCOVERY_INTERVAL_MS {interval!r} must be a positive whole number of milliseconds")


def overlays(root):
    base = os.path.join(root, "overlays")
    return sorted(os.path.join(base, d) for d in os.listdir(base)
                  if os.path.isfile(os.path.join(base, d, "kustomization.yaml")))


def validate(root, binary=None):
    """Renders and checks every overlay and the client example under root."""
    problems = Problems()
    rendered = {}
    for d in overlays(root) + [os.path.join(root, "examples", "client")]:
        where = os.path.relpath(d, root)
        try:
            objs = kustomize_lite.build(d)
        except kustomize_lite.RenderError as e:
            problems.add(where, f"does not render: {e}")
            continue
        rendered[where] = objs
        for o in objs:
            check_schema(o, f"{where}: {o.get('kind')} {(o.get('metadata') or {}).get('name')}", problems)
    for where, objs in rendered.items():
        if where.startswith("overlays"):
            check_server(objs, where, problems, binary)
    if "examples/client" in rendered:
        for where, objs in rendered.items():
            if where.startswith("overlays"):
                check_client(rendered["examples/client"], objs, f"examples/client vs {where}", problems)
    if not any(w.startswith("overlays") for w in rendered):
        problems.add(root, "no overlay rendered")
    return problems, rendered


def kubectl_kustomize(directory):
    """kubectl kustomize's objects for directory, or None without kubectl."""
    kubectl = shutil.which("kubectl")
    if not kubectl:
        return None
    r = subprocess.run([kubectl, "kustomize", directory], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {directory}: {r.stderr.strip()}")
    return [d for d in yaml.safe_load_all(r.stdout) if d is not None]


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    if k8s_models is None:
        print("validate_manifests: python3-kubernetes is not installed (apt-get install python3-kubernetes; scripts/install-deps.sh)", file=sys.stderr)
        return 2
    problems, rendered = validate(argv[1], os.environ.get("MEMKV_BINARY"))
    for n in problems.notes:
        print(f"note: {n}")
    for p in problems.items:
        print(p)
    print(f"{len(rendered)} kustomization(s), {sum(len(o) for o in rendered.values())} object(s), {len(problems.items)} problem(s)")
    return 1 if problems.items else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
