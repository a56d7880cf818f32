"""A small kustomize: renders deploy/kubernetes/ without kubectl.

Supports what the MemKV manifests use, and refuses everything else by name
(so a manifest that needs more fails here rather than rendering wrongly):

- kustomization.yaml of kind Kustomization (kustomize.config.k8s.io/v1beta1)
  or Component (kustomize.config.k8s.io/v1alpha1);
- resources: YAML files (several documents each) and directories holding a
  Kustomization;
- components: directories holding a Component; applied in order after the
  resources, each adding its resources and applying its patches to
  everything accumulated so far;
- patches: strategic merge patches given by `path` (or inline `patch`),
  matched to their object by apiVersion's group, kind and metadata.name.
  Maps merge; lists with a Kubernetes merge key (containers, initContainers,
  volumes and env by name, volumeMounts by mountPath, volumeDevices by
  devicePath, container ports by containerPort, Service ports by port,
  imagePullSecrets by name) merge item by item; every other list is
  replaced, as kubectl does. `$patch` directives and `target:` are refused;
- images: name, newName, newTag, digest, for pod template containers and
  init containers.

Order: resources, then components, then this kustomization's patches, then
images.
"""

import copy
import os

import yaml

KUSTOMIZE_GROUP = "kustomize.config.k8s.io"
SUPPORTED_FIELDS = {"apiVersion", "kind", "resources", "components", "patches", "images"}

MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
}


class RenderError(Exception):
    pass


def _load_yaml_docs(path):
    with open(path) as f:
        try:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            raise RenderError(f"{path}: not valid YAML: {e}") from e
    for d in docs:
        if not isinstance(d, dict):
            raise RenderError(f"{path}: a document is a {type(d).__name__}, not a Kubernetes object")
    return docs


def _load_kustomization(directory, want_kind):
    path = os.path.join(directory, "kustomization.yaml")
    if not os.path.isfile(path):
        raise RenderError(f"{directory}: no kustomization.yaml")
    docs = _load_yaml_docs(path)
    if len(docs) != 1:
        raise RenderError(f"{path}: holds {len(docs)} documents, expected 1")
    k = docs[0]
    api = {"Kustomization": f"{KUSTOMIZE_GROUP}/v1beta1", "Component": f"{KUSTOMIZE_GROUP}/v1alpha1"}
    if k.get("kind") != want_kind or k.get("apiVersion") != api[want_kind]:
        raise RenderError(f"{path}: kind {k.get('kind')!r} apiVersion {k.get('apiVersion')!r}; "
                          f"expected {want_kind} {api[want_kind]}")
    unknown = sorted(set(k) - SUPPORTED_FIELDS)
    if unknown:
        raise RenderError(f"{path}: unsupported kustomization field(s) {', '.join(unknown)}; "
                          f"this renderer supports {', '.join(sorted(SUPPORTED_FIELDS))}")
    return path, k


def object_id(obj):
    group = obj.get("apiVersion", "").rpartition("/")[0] if "/" in obj.get("apiVersion", "") else ""
    meta = obj.get("metadata") or {}
    return (group, obj.get("kind"), meta.get("namespace"), meta.get("name"))


def _merge_list(base, patch, key, where):
    """Merges by key, ordered as kubectl's strategic merge orders them: the
    patch's items (merged with the originals they name) in patch order,
    interleaved with the original-only items in original order; a new item
    goes before the original-only item it is compared with."""
    order = [b.get(key) for b in base if isinstance(b, dict)]
    left = []
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise RenderError(f"{where}: patch list item without its merge key '{key}': {item!r}")
        orig = next((b for b in base if isinstance(b, dict) and b.get(key) == item[key]), None)
        left.append(strategic_merge(orig, item, f"{where}[{key}={item[key]}]") if orig is not None
                    else copy.deepcopy(item))
    named = {item[key] for item in patch}
    right = [copy.deepcopy(b) for b in base if not (isinstance(b, dict) and b.get(key) in named)]
    result, i, j = [], 0, 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            result.append(right[j]); j += 1
        elif j >= len(right):
            result.append(left[i]); i += 1
        else:
            li = order.index(left[i][key]) if left[i][key] in order else -1
            r = right[j].get(key) if isinstance(right[j], dict) else None
            ri = order.index(r) if r in order else -1
            if li >= 0 and ri >= 0 and ri < li:
                result.append(right[j]); j += 1
            else:
                result.append(left[i]); i += 1
    return result


def _list_merge_key(name, base, patch):
    if name in MERGE_KEYS:
        return MERGE_KEYS[name]
    if name == "ports":
        items = [i for i in list(base) + list(patch) if isinstance(i, dict)]
        if items and all("containerPort" in i for i in items):
            return "containerPort"
        if items and all("port" in i for i in items):
            return "port"
    return None


def strategic_merge(base, patch, where="patch"):
    """Merges patch into base (both dicts) the way kubectl's strategic merge
    patch does for the fields described in the module docstring."""
    result = copy.deepcopy(base)
    for k, v in patch.items():
        if isinstance(k, str) and k.startswith("$"):
            raise RenderError(f"{where}: the directive {k!r} is not supported by this renderer")
        path = f"{where}.{k}"
        if v is None:
            result.pop(k, None)
        elif isinstance(v, dict) and isinstance(result.get(k), dict):
            result[k] = strategic_merge(result[k], v, path)
        elif isinstance(v, list) and isinstance(result.get(k), list):
            key = _list_merge_key(k, result[k], v)
            result[k] = _merge_list(result[k], v, key, path) if key else copy.deepcopy(v)
        else:
            result[k] = copy.deepcopy(v)
    return result


def _apply_patches(kpath, directory, patches, objs):
    for i, p in enumerate(patches or []):
        where = f"{kpath}: patches[{i}]"
        if not isinstance(p, dict):
            raise RenderError(f"{where}: expected a map with 'path' or 'patch'")
        unknown = sorted(set(p) - {"path", "patch"})
        if unknown:
            raise RenderError(f"{where}: unsupported field(s) {', '.join(unknown)}; supported: path, patch")
        if "path" in p:
            docs = _load_yaml_docs(os.path.join(directory, p["path"]))
            where = f"{os.path.join(directory, p['path'])}"
        elif "patch" in p:
            docs = [d for d in yaml.safe_load_all(p["patch"]) if d is not None]
        else:
            raise RenderError(f"{where}: needs 'path' or 'patch'")
        for doc in docs:
            pid = object_id(doc)
            matches = [j for j, o in enumerate(objs)
                       if object_id(o)[:2] == pid[:2] and object_id(o)[3] == pid[3]
                       and (pid[2] is None or object_id(o)[2] == pid[2])]
            if len(matches) != 1:
                raise RenderError(f"{where}: patch for {pid[1]} {pid[3]!r} matches {len(matches)} objects, expected 1")
            objs[matches[0]] = strategic_merge(objs[matches[0]], doc, where)
    return objs


def _pod_containers(obj):
    spec = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {})
    return list(spec.get("initContainers") or []) + list(spec.get("containers") or [])


def _apply_images(kpath, images, objs):
    for i, img in enumerate(images or []):
        unknown = sorted(set(img) - {"name", "newName", "newTag", "digest"})
        if unknown or "name" not in img:
            raise RenderError(f"{kpath}: images[{i}]: needs name; supported: name, newName, newTag, digest")
        for obj in objs:
            for c in _pod_containers(obj):
                ref = c.get("image", "")
                name, tag = ref, None
                if "@" in ref:
                    name = ref.split("@", 1)[0]
                elif ":" in ref.rsplit("/", 1)[-1]:
                    name, tag = ref.rsplit(":", 1)
                if name != img["name"]:
                    continue
                new = img.get("newName", name)
                if "digest" in img:
                    c["image"] = f"{new}@{img['digest']}"
                elif "newTag" in img:
                    c["image"] = f"{new}:{img['newTag']}"
                else:
                    c["image"] = f"{new}:{tag}" if tag else new
    return objs


def _resources(kpath, directory, k):
    objs = []
    for r in k.get("resources") or []:
        path = os.path.join(directory, r)
        if os.path.isdir(path):
            objs.extend(build(path))
        elif os.path.isfile(path):
            objs.extend(_load_yaml_docs(path))
        else:
            raise RenderError(f"{kpath}: resource {r!r} does not exist")
    return objs


def _apply_component(directory, objs):
    kpath, k = _load_kustomization(directory, "Component")
    objs = objs + _resources(kpath, directory, k)
    for c in k.get("components") or []:
        objs = _apply_component(os.path.join(directory, c), objs)
    objs = _apply_patches(kpath, directory, k.get("patches"), objs)
    return _apply_images(kpath, k.get("images"), objs)


def build(directory):
    """Renders the Kustomization in directory: a list of objects."""
    kpath, k = _load_kustomization(directory, "Kustomization")
    objs = _resources(kpath, directory, k)
    for c in k.get("components") or []:
        objs = _apply_component(os.path.join(directory, c), objs)
    objs = _apply_patches(kpath, directory, k.get("patches"), objs)
    objs = _apply_images(kpath, k.get("images"), objs)
    seen = set()
    for o in objs:
        oid = object_id(o)
        if oid in seen:
            raise RenderError(f"{directory}: {oid[1]} {oid[3]!r} is defined twice")
        seen.add(oid)
    return objs
