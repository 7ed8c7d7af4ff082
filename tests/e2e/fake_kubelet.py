"""A fake kubelet pod-resources server for the tests and the bench: PodResourcesLister/List over a unix
socket in a temporary directory, answering whatever fixture the test sets, and counting the calls.

The message classes are generated at run time from gpulse's own src/k8s/podresources_v1.proto with
Debian's protoc (protobuf-compiler) into a temporary directory; the server is python3-grpcio's with a
generic handler, so no grpc_tools stubs are needed. Run with Debian's /usr/bin/python3."""
import importlib
import os
import subprocess
import sys
import tempfile
import threading
from concurrent import futures

import grpc

from gpulse_e2e import SOURCE_DIR

PROTO_DIR = os.path.join(SOURCE_DIR, "src", "k8s")
_pb2 = None


def messages():
    """The generated module (podresources_v1_pb2), built once per process."""
    global _pb2
    if _pb2 is None:
        out = tempfile.mkdtemp(prefix="gpulse-pb2-")
        subprocess.run(["protoc", "-I" + PROTO_DIR, "--python_out=" + out,
                        os.path.join(PROTO_DIR, "podresources_v1.proto")], check=True)
        sys.path.insert(0, out)
        _pb2 = importlib.import_module("podresources_v1_pb2")
    return _pb2


def response(pods):
    """A ListPodResourcesResponse from [(namespace, pod, [(container, [(resource, [device ids])]
    [, [cpu ids]])])]."""
    pb = messages()
    r = pb.ListPodResourcesResponse()
    for ns, name, containers in pods:
        p = r.pod_resources.add(name=name, namespace=ns)
        for cname, devices, *cpus in containers:
            c = p.containers.add(name=cname, cpu_ids=cpus[0] if cpus else [])
            for resource, ids in devices:
                c.devices.add(resource_name=resource, device_ids=ids)
    return r


def filler_pods(n, prefix="filler"):
    """N pods holding no GPU: three containers each, with NIC and SR-IOV device ids and CPU ids, as a
    busy kubelet answers (about 1.2 KB a pod: 5,000 of them make a 6 MB answer, over gRPC's 4 MiB
    default)."""
    pods = []
    for i in range(n):
        containers = []
        for c in range(3):
            devices = [(f"example.com/sriov-vf-{k}", [f"0000:{(i * 7 + c) % 256:02x}:{k:02x}.{j} vf-{i}-{c}-{k}-{j}"
                                                     for j in range(4)]) for k in range(2)]
            containers.append((f"main-{c}", devices, list(range(32))))
        pods.append(("batch", f"{prefix}-{i:05d}", containers))
    return pods


class FakeKubelet:
    """Serves List on SOCKET_PATH. `pods` (see response()) may be replaced at any time; `fail` makes
    List answer UNAVAILABLE; `calls` counts the List calls."""

    def __init__(self, socket_path, pods=()):
        self.socket_path = socket_path
        self.calls = 0
        self.fail = False
        self._lock = threading.Lock()
        # The answer is serialized once, when set, not per call: a 5,000-pod answer takes 70 ms of
        # Python per serialization, CPU that a kubelet written in Go does not spend and that would
        # otherwise land beside the exporter's scrapes in the benchmarks (bench/exporter/kubernetes.py).
        self._answer = response(pods).SerializeToString()
        pb = messages()
        handler = grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
            "List": grpc.unary_unary_rpc_method_handler(
                self._list, request_deserializer=pb.ListPodResourcesRequest.FromString,
                response_serializer=lambda answer: answer),
        })
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                                  options=[("grpc.max_send_message_length", 256 << 20)])
        self.server.add_generic_rpc_handlers((handler,))
        self.server.add_insecure_port("unix:" + socket_path)
        self.server.start()

    def set_pods(self, pods):
        answer = response(pods).SerializeToString()
        with self._lock:
            self._answer = answer

    def set_answer_bytes(self, answer):
        """Answers these bytes as they are (for an answer that is not a ListPodResourcesResponse)."""
        with self._lock:
            self._answer = answer

    def answer_size(self):
        with self._lock:
            return len(self._answer)

    def _list(self, request, context):
        with self._lock:
            self.calls += 1
            if self.fail:
                context.abort(grpc.StatusCode.UNAVAILABLE, "fake kubelet: told to fail")
            return self._answer

    def stop(self):
        self.server.stop(0).wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
