"""deploy/kubernetes/: every overlay renders and validates; broken copies fail.

Run: MEMKV_BINARY=build/memkv /usr/bin/python3 -m pytest -q tests/deploy
(ctest -R deploy_manifests_test sets both variables).
"""

import os
import shutil

import pytest
import yaml

import kustomize_lite
import validate_manifests as vm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("MEMKV_DEPLOY_DIR") or os.path.join(HERE, "..", "..", "deploy", "kubernetes")
BINARY = os.environ.get("MEMKV_BINARY")
if BINARY and not os.access(BINARY, os.X_OK):
    BINARY = None

OVERLAYS = ["direct", "direct-rdma", "file", "monitoring", "rdma"]


def test_python3_kubernetes_is_installed():
    assert vm.k8s_models is not None, "python3-kubernetes is missing: apt-get install python3-kubernetes (scripts/install-deps.sh)"


def test_every_overlay_renders_and_validates():
    problems, rendered = vm.validate(ROOT, BINARY)
    for n in problems.notes:
        print("note:", n)
    assert problems.items == []
    assert sorted(os.path.basename(d) for d in vm.overlays(ROOT)) == OVERLAYS
    assert "examples/client" in rendered
    kinds = sorted(o["kind"] for o in rendered["overlays/monitoring"])
    assert kinds == ["ConfigMap", "PodDisruptionBudget", "Service", "ServiceMonitor", "StatefulSet"]


def test_server_config_is_checked_by_the_binary():
    if not BINARY:
        pytest.skip("MEMKV_BINARY not set: the config is checked as YAML only")
    problems, _ = vm.validate(ROOT, BINARY)
    assert problems.items == []
    # Every overlay's config went through `memkv start --check`: it passed
    # the rules (a rejection is a problem, not a note), and only this host's
    # pre-flight (drive space, devices, hugepages) may have spoken.
    assert problems.config_checks == len(OVERLAYS)


def test_overlays_compose():
    sts = {o: next(x for x in kustomize_lite.build(os.path.join(ROOT, "overlays", o)) if x["kind"] == "StatefulSet")
           for o in OVERLAYS}
    base_c = sts["file"]["spec"]["template"]["spec"]["containers"][0]
    both = sts["direct-rdma"]["spec"]["template"]["spec"]
    c = both["containers"][0]
    # The merge keeps the base's fields and adds each component's.
    assert c["readinessProbe"] == base_c["readinessProbe"]
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    assert [d["devicePath"] for d in c["volumeDevices"]] == ["/dev/memkv/drive0"]
    assert both["hostNetwork"] is True
    assert [i["name"] for i in both["initContainers"]] == ["format", "auth-key"]
    assert [t["metadata"]["name"] for t in sts["direct"]["spec"]["volumeClaimTemplates"]] == ["data", "drive0"]
    assert c["resources"]["limits"]["hugepages-2Mi"] == "4Gi"


def _norm(objs):
    return sorted((yaml.safe_dump(o, sort_keys=True) for o in objs))


@pytest.mark.parametrize("target", [f"overlays/{o}" for o in OVERLAYS] + ["examples/client"])
def test_same_as_kubectl_kustomize(target):
    theirs = vm.kubectl_kustomize(os.path.join(ROOT, target))
    if theirs is None:
        pytest.skip("kubectl is not installed (optional)")
    assert _norm(kustomize_lite.build(os.path.join(ROOT, target))) == _norm(theirs)


def test_strategic_merge():
    base = {"spec": {"containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 1, "name": "p"}]},
                                    {"name": "b", "image": "y"}],
                     "claims": [{"name": "one"}], "keep": 1, "drop": 2}}
    patch = {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 2, "name": "q"}]},
                                     {"name": "c", "image": "z"}],
                      "claims": [{"name": "two"}], "drop": None}}
    out = kustomize_lite.strategic_merge(base, patch)
    # kubectl's order (checked against kubectl kustomize): patch items in
    # patch order, original-only items interleaved by original position,
    # a new item ahead of the original-only item it meets.
    assert out["spec"]["containers"] == [
        {"name": "a", "image": "x", "ports": [{"containerPort": 2, "name": "q"}, {"containerPort": 1, "name": "p"}]},
        {"name": "c", "image": "z"}, {"name": "b", "image": "y"}]
    assert out["spec"]["claims"] == [{"name": "two"}]  # no merge key: replaced
    assert out["spec"]["keep"] == 1 and "drop" not in out["spec"]
    with pytest.raises(kustomize_lite.RenderError, match=r"\$patch"):
        kustomize_lite.strategic_merge(base, {"spec": {"$patch": "replace"}})


# (file under deploy/kubernetes, text to replace, replacement, what the report must say)
BROKEN = [
    ("base/statefulset.yaml", "readinessProbe:", "readynessProbe:", "readynessProbe: unknown field in V1Container"),
    ("base/statefulset.yaml", "            periodSeconds: 5\n            timeoutSeconds: 3\n            failureThreshold: 2",
     "            periodSecond: 5\n            timeoutSeconds: 3\n            failureThreshold: 2", "unknown field in V1Probe"),
    ("base/statefulset.yaml", "replicas: 3", "replicas: \"3\"", "expected an integer"),
    ("base/statefulset.yaml", "  serviceName: memkv", "  serviceName: memkv-headless", "is not the headless Service"),
    ("base/statefulset.yaml", "httpGet: {path: /v1/ready, port: admin}", "httpGet: {path: /v1/ready, port: memkv}",
     "readinessProbe port 'memkv' is not the admin port"),
    ("base/statefulset.yaml", "httpGet: {path: /v1/ready, port: admin}", "httpGet: {path: /healthz, port: admin}",
     "readinessProbe asks '/healthz'"),
    ("base/statefulset.yaml", "memkv admin drain", "memkv admin status", "preStop must run 'memkv admin drain'"),
    ("base/statefulset.yaml", "terminationGracePeriodSeconds: 70", "terminationGracePeriodSeconds: 30",
     "terminationGracePeriodSeconds 30"),
    ("base/statefulset.yaml", "apiVersion: apps/v1", "apiVersion: apps/v1beta1", "unknown kind/apiVersion StatefulSet apps/v1beta1"),
    ("base/statefulset.yaml", "            - name: memkv\n              containerPort: 9900",
     "            - name: data\n              containerPort: 9900", "ports {'data': 9900"),
    ("base/statefulset.yaml", "              mountPath: /var/lib/memkv\n            - name: config",
     "              mountPath: /var/lib/memkv-data\n            - name: config", "--data-dir /var/lib/memkv is not a volumeClaimTemplate"),
    ("base/service.yaml", "  clusterIP: None", "  clusterIP: 10.0.0.10", "a headless Service needs None"),
    ("base/service.yaml", "publishNotReadyAddresses: false", "publishNotReadyAddresses: true", "publishNotReadyAddresses must be false"),
    ("base/service.yaml", "  selector:\n    app.kubernetes.io/name: memkv", "  selector:\n    app.kubernetes.io/name: memkv-server",
     "selector {'app.kubernetes.io/name': 'memkv-server'"),
    ("base/service.yaml", "- name: memkv\n      port: 9900", "- name: data\n      port: 9900", "no port named memkv"),
    ("base/pdb.yaml", "maxUnavailable: 1", "maxUnavailable: 2", "maxUnavailable 2; expected 1"),
    ("base/configmap.yaml", "      address: 0.0.0.0:9900", "      address: 127.0.0.1:9900", "network.address '127.0.0.1:9900'"),
    ("base/configmap.yaml", "size: 90 GiB", "size: 200 GiB", "do not fit the data claim"),
    ("base/kustomization.yaml", "resources:", "namePrefix: x-\nresources:", "unsupported kustomization field(s) namePrefix"),
    ("components/direct/direct-config.yaml", "- media: /dev/memkv/drive0", "- media: /dev/memkv/drive1",
     "direct drive /dev/memkv/drive1 is not one of the volumeDevices"),
    ("components/direct/direct-statefulset.yaml", "        volumeMode: Block", "        volumeMode: Filesystem", "must have volumeMode: Block"),
    ("components/direct/direct-statefulset.yaml", "  name: memkv\n", "  name: memkv-server\n", "matches 0 objects"),
    ("components/rdma/rdma-statefulset.yaml", "add: [IPC_LOCK]", "add: [NET_RAW]", "add the IPC_LOCK capability"),
    ("components/rdma/rdma-statefulset.yaml", "              hugepages-2Mi: 4Gi\n              rdma",
     "              hugepages-2Mi: 2Gi\n              rdma", "hugepages-2Mi requests and limits must be equal"),
    ("components/servicemonitor/servicemonitor.yaml", "    - port: admin", "    - port: memkv", "must scrape the admin port"),
    ("components/servicemonitor/servicemonitor.yaml", "      interval: 15s", "      intervall: 15s", "intervall: unknown field"),
    ("examples/client/engine-deployment.yaml", "dns:memkv.$(POD_NAMESPACE)", "dns:memkv-servers.$(POD_NAMESPACE)",
     "MEMKV_SERVERS names Service 'memkv-servers'"),
    ("examples/client/engine-deployment.yaml", "                  name: memkv-auth", "                  name: memkv-key",
     "MEMKV_AUTH_KEY must come from the servers' Secret"),
    ("examples/client/client-configmap.yaml", "MEMKV_TRANSPORT: auto", "MEMKV_TRANSPORT: ib", "MEMKV_TRANSPORT 'ib'"),
]


@pytest.mark.parametrize("path,old,new,expect", BROKEN, ids=[f"{b[0]}:{b[3][:40]}" for b in BROKEN])
def test_broken_copy_fails(tmp_path, path, old, new, expect):
    root = tmp_path / "kubernetes"
    shutil.copytree(ROOT, root)
    f = root / path
    text = f.read_text()
    assert old in text, f"the mutation no longer applies to {path}"
    f.write_text(text.replace(old, new, 1))
    problems, _ = vm.validate(str(root), None)
    assert problems.items, f"a copy with {path}: {old!r} -> {new!r} passed validation"
    assert any(expect in p for p in problems.items), "\n".join(problems.items)


def test_config_the_binary_rejects_fails(tmp_path):
    if not BINARY:
        pytest.skip("MEMKV_BINARY not set")
    root = tmp_path / "kubernetes"
    shutil.copytree(ROOT, root)
    f = root / "base" / "configmap.yaml"
    f.write_text(f.read_text().replace("      sync: interval", "      sync: sometimes", 1))
    problems, _ = vm.validate(str(root), BINARY)
    assert any("memkv start --check rejects the config" in p and "storage.sync" in p for p in problems.items), \
        "\n".join(problems.items)
