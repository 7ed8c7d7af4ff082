"""A throwaway multi-node Slurm cluster on one machine, for end-to-end tests (root only).

Debian's slurmctld, slurmd and munged, started from a temporary directory that holds everything
they use (slurm.conf, cgroup.conf, state, spool, pid and log files, the munge key and socket):
no Slurm or munge file under /etc or /var is used. The head node (slurmctld, salloc, srun,
`gpulse collect`) stays in this network namespace, with an address on a bridge the cluster
creates; every compute node is a slurmd in a network namespace of its own (a veth pair into the
bridge, its own address) and a UTS namespace of its own (its own hostname); all share this PID
namespace and file system. Names carry this process's id, so two runs do not collide.

Also a small command line for the pieces that run inside the allocation (run with /usr/bin/python3):
  slurm_cluster.py in-allocation OUT.json -- CMD...   runs CMD; then records the job steps still
                                                      known to slurmctld and every process whose
                                                      command line holds $GPULSE_PROCESS_MARK
  slurm_cluster.py snapshot OUT.json URL...           records the job steps and each URL's
                                                      DCGM_FI_DEV_POWER_USAGE lines
"""
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

DAEMONS = ("slurmctld", "slurmd", "munged", "srun", "salloc", "squeue", "sinfo", "scancel")
SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin"])


def tool(name):
    """The path of a program, looked up on PATH and the sbin directories (None when missing)."""
    return shutil.which(name, path=SBIN_PATH)


def missing_tools():
    """The Slurm, munge and iproute2 programs the cluster needs that are not installed."""
    return [name for name in (*DAEMONS, "ip", "unshare") if tool(name) is None]


def run(*argv, check=True, timeout=30, **kw):
    """Runs a short command, output captured; raises with its output when check and it fails."""
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed with exit code {p.returncode}: {p.stdout}{p.stderr}")
    return p


def free_subnet():
    """A 10.213.X.0/24 no interface of this namespace uses, X chosen from this process's id."""
    nets = []
    for word in run("ip", "-o", "-4", "addr", "show").stdout.split():
        try:
            nets.append(ipaddress.ip_interface(word).network)
        except ValueError:
            pass  # not an address
    for k in range(254):
        x = (os.getpid() + k) % 254 + 1
        net = ipaddress.ip_network(f"10.213.{x}.0/24")
        if not any(net.overlaps(n) for n in nets):
            return f"10.213.{x}"
    raise RuntimeError("no free 10.213.X.0/24 subnet")


def free_port():
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def wait_for(what, predicate, timeout=60, interval=0.2, on_timeout=lambda: ""):
    """Polls predicate() until it is true; raises naming `what` (and on_timeout()'s text) after
    `timeout` seconds. The deadline only bounds a hang: nothing here asserts how fast it was."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} within {timeout} s. {on_timeout()}")
        time.sleep(interval)


def read_tail(path, limit=4000):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-limit:]
    except OSError as e:
        return f"({path}: {e})"


class Cluster:
    """slurmctld and munged here, one slurmd per node in its own network and UTS namespace.

    `root` is an empty directory the cluster owns. create_network() builds the bridge and the
    namespaces, start() writes the config below `root` and starts the daemons; stop() (safe to
    call at any point, and more than once) ends every process the cluster started, directly or
    through Slurm, and removes the namespaces, links and bridge."""

    def __init__(self, root, nodes=("node1", "node2")):
        self.root = root
        self.node_names = list(nodes)
        self.tag = f"gpsl{os.getpid()}"  # <= 15 characters for interface names
        self.bridge = self.tag
        self.subnet = None
        self.netns = []  # created namespaces, removed by stop()
        self.links = []  # created host-side links
        self.procs = []  # daemons started directly
        self.head = socket.gethostname().split(".")[0]
        self.conf = os.path.join(root, "slurm.conf")
        self.munge_socket = os.path.join(root, "munge", "munge.socket")
        self.logs = os.path.join(root, "log")

    # -- addresses and environment ------------------------------------------------------------
    @property
    def head_address(self):
        return f"{self.subnet}.1"

    def address(self, node):
        return f"{self.subnet}.{10 + self.node_names.index(node) + 1}"

    def namespace(self, node):
        return f"{self.tag}n{self.node_names.index(node) + 1}"

    def env(self, **extra):
        """The environment for Slurm clients and daemons: SLURM_CONF names this cluster's config,
        and GPULSE_SLURM_CLUSTER marks every process started with it (stop() ends them)."""
        env = dict(os.environ, SLURM_CONF=self.conf, GPULSE_SLURM_CLUSTER=self.root)
        env["PATH"] = SBIN_PATH
        env.update(extra)
        return env

    # -- start --------------------------------------------------------------------------------
    def create_network(self):
        """The bridge (head address .1) and one namespace per node (.11, .12, ...) joined to it by
        a veth pair. Raises RuntimeError naming the command that failed."""
        os.makedirs(self.logs, exist_ok=True)
        self.subnet = free_subnet()
        run("ip", "link", "add", self.bridge, "type", "bridge")
        self.links.append(self.bridge)
        run("ip", "addr", "add", f"{self.head_address}/24", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        for i, node in enumerate(self.node_names, 1):
            ns, host_end, node_end = self.namespace(node), f"{self.tag}v{i}", f"{self.tag}p{i}"
            run("ip", "netns", "add", ns)
            self.netns.append(ns)
            run("ip", "link", "add", host_end, "type", "veth", "peer", "name", node_end)
            self.links.append(host_end)
            run("ip", "link", "set", host_end, "master", self.bridge, "up")
            run("ip", "link", "set", node_end, "netns", ns)
            run("ip", "-n", ns, "link", "set", node_end, "name", "eth0")
            run("ip", "-n", ns, "addr", "add", f"{self.address(node)}/24", "dev", "eth0")
            run("ip", "-n", ns, "link", "set", "eth0", "up")
            run("ip", "-n", ns, "link", "set", "lo", "up")

    def write_config(self):
        """slurm.conf and cgroup.conf beside it (slurmd reads cgroup.conf from SLURM_CONF's directory)."""
        for d in ("state", "log", *(os.path.join("spool", n) for n in self.node_names)):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        r = self.root
        lines = [
            f"ClusterName={self.tag}",
            f"SlurmctldHost={self.head}({self.head_address})",
            f"SlurmctldPort={free_port()}",
            "SlurmdPort=6818",  # one slurmd per network namespace: no clash
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={r}/state", f"SlurmdSpoolDir={r}/spool/%n",
            f"SlurmctldPidFile={r}/slurmctld.pid", f"SlurmdPidFile={r}/slurmd.%n.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log", f"SlurmdLogFile={r}/log/slurmd.%n.log",
            # No cgroups: processes are tracked through /proc, tasks are not confined.
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none", "SwitchType=switch/none",
            "MpiDefault=none", "MailProg=/bin/true",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
            # Heterogeneous jobs are scheduled by the backfill scheduler only: run it every second.
            "SchedulerType=sched/backfill", "SchedulerParameters=bf_interval=1",
            "ReturnToService=2", "KillWait=2", "InactiveLimit=0",
        ]
        for node in self.node_names:
            lines.append(f"NodeName={node} NodeAddr={self.address(node)} CPUs=1 RealMemory=100 State=UNKNOWN")
        lines.append(f"PartitionName=test Nodes={','.join(self.node_names)} Default=YES MaxTime=INFINITE State=UP")
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        # slurmd always loads a cgroup plugin; `ip netns exec` mounts a fresh /sys without cgroup
        # file systems, where autodetection fails. cgroup/v1 with nothing to mount initializes,
        # and nothing uses it (proctrack/linuxproc, task/none).
        with open(os.path.join(r, "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n")

    def spawn(self, name, argv):
        """Starts a daemon in the foreground, its output in log/<name>.out."""
        out = open(os.path.join(self.logs, name + ".out"), "wb")
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 env=self.env(), start_new_session=True)
        finally:
            out.close()
        self.procs.append(p)
        return p

    def start_munge(self):
        d = os.path.dirname(self.munge_socket)
        os.makedirs(d, mode=0o700)
        key = os.path.join(d, "munge.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400), "wb") as f:
            f.write(os.urandom(1024))
        # --force: the socket's directory is not world-searchable (it is below a private temp dir).
        # --origin: the address credentials name, set so this host's name need not resolve.
        p = self.spawn("munged", [tool("munged"), "--foreground", "--force", "--origin=127.0.0.1",
                                  f"--socket={self.munge_socket}",
                                  f"--key-file={key}", f"--pid-file={d}/munged.pid",
                                  f"--log-file={self.logs}/munged.log", f"--seed-file={d}/munged.seed"])
        wait_for("munged did not create its socket", lambda: os.path.exists(self.munge_socket) or p.poll() is not None,
                 timeout=30)
        if p.poll() is not None:
            raise RuntimeError(f"munged exited: {read_tail(os.path.join(self.logs, 'munged.out'))}")

    def start_slurmd(self, node):
        """slurmd -N node in the node's network namespace and a new UTS namespace named after it."""
        ns = self.namespace(node)
        return self.spawn(f"slurmd.{node}", [tool("ip"), "netns", "exec", ns, tool("unshare"), "--uts", "sh", "-c",
                                             'hostname "$0" && exec "$1" -D -N "$0"', node, tool("slurmd")])

    def node_states(self):
        """{node: state} as sinfo reports it ({} while slurmctld does not answer)."""
        p = run(tool("sinfo"), "-h", "-N", "-o", "%N %T", check=False, env=self.env())
        if p.returncode != 0:
            return {}
        return dict(line.split()[:2] for line in p.stdout.splitlines() if len(line.split()) >= 2)

    def start(self):
        """The daemons, once create_network() has built the network; returns when every node is idle."""
        self.write_config()
        self.start_munge()
        ctld = self.spawn("slurmctld", [tool("slurmctld"), "-D"])
        wait_for("slurmctld did not answer", lambda: bool(self.node_states()) or ctld.poll() is not None, timeout=45,
                 on_timeout=self.diagnostics)
        if ctld.poll() is not None:
            raise RuntimeError(f"slurmctld exited. {self.diagnostics()}")
        slurmds = [self.start_slurmd(n) for n in self.node_names]

        def all_idle():
            if any(p.poll() is not None for p in [ctld, *slurmds]):
                raise RuntimeError(f"a Slurm daemon exited. {self.diagnostics()}")
            states = self.node_states()
            return all(states.get(n) == "idle" for n in self.node_names)

        wait_for("the nodes did not all become idle", all_idle, timeout=45, on_timeout=self.diagnostics)

    def diagnostics(self):
        """The daemons' recent output, for failure messages."""
        names = ["munged.out", "slurmctld.out", *(f"slurmd.{n}.out" for n in self.node_names),
                 "slurmctld.log", *(f"slurmd.{n}.log" for n in self.node_names)]
        return "\n".join(f"--- {n}:\n{read_tail(os.path.join(self.logs, n), 1500)}" for n in names
                         if os.path.exists(os.path.join(self.logs, n)))

    # -- stop ---------------------------------------------------------------------------------
    def marked_pids(self, mark=None):
        """Processes in this PID namespace whose environment holds `mark` ("NAME=value"), by
        default this cluster's: the daemons, salloc, srun, gpulse collect and whatever they started
        on the head node."""
        mark = (mark or f"GPULSE_SLURM_CLUSTER={self.root}").encode()
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if mark in f.read().split(b"\0"):
                        pids.append(int(entry))
            except OSError:
                pass
        return pids

    def namespace_pids(self):
        pids = []
        for ns in self.netns:
            p = run(tool("ip"), "netns", "pids", ns, check=False)
            pids += [int(w) for w in p.stdout.split() if w.isdigit()]
        return pids

    def kill(self, pids):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def end_jobs(self, mark):
        """After a test: SIGKILL to the head-node processes whose environment holds `mark` (its
        salloc, collect, srun), every job cancelled, and back when the nodes are idle again, so
        that what one test left running cannot hold the nodes of the next."""
        for _ in range(10):
            pids = self.marked_pids(mark)
            if not pids:
                break
            self.kill(pids)
            time.sleep(0.1)
        run(tool("scancel"), "--user=root", check=False, env=self.env())
        wait_for("the nodes did not become idle after the test", lambda: all(
            self.node_states().get(n) == "idle" for n in self.node_names), timeout=30, on_timeout=self.diagnostics)

    def stop(self):
        """Ends everything the cluster started (SIGKILL: nothing here needs a clean shutdown, and
        the temporary directory goes with it), then removes the namespaces, links and bridge."""
        for _ in range(10):  # processes may fork while they are being killed
            pids = set(self.namespace_pids() + self.marked_pids())
            if not pids:
                break
            self.kill(pids)
            time.sleep(0.1)
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs = []
        for ns in self.netns:  # the node ends of the veth pairs go with their namespaces
            run(tool("ip"), "netns", "del", ns, check=False)
        for link in reversed(self.links):
            if run(tool("ip"), "link", "show", link, check=False).returncode == 0:
                run(tool("ip"), "link", "del", link, check=False)
        self.netns, self.links = [], []


# -- the command line run inside the allocation -----------------------------------------------
def job_steps():
    """The job steps slurmctld knows: ["<step id> <nodes>", ...]."""
    p = subprocess.run(["squeue", "-h", "-s", "-o", "%i %N"], capture_output=True, text=True, timeout=30)
    return {"exit_code": p.returncode, "steps": p.stdout.split("\n")[:-1], "stderr": p.stderr}


def steps_once_settled(timeout=30):
    """job_steps() once slurmctld lists none, or as it stands after `timeout` s: a step's
    completion reaches slurmctld from its slurmstepd, a moment after srun has seen its tasks end."""
    deadline = time.monotonic() + timeout
    while True:
        steps = job_steps()
        if (steps["exit_code"] == 0 and not steps["steps"]) or time.monotonic() > deadline:
            return steps
        time.sleep(0.2)


def processes_holding(mark):
    """[pid, command line] of every process (but this one) whose command line contains `mark`."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if mark in cmdline:
            out.append([int(entry), cmdline])
    return out


def main(argv):
    if len(argv) >= 4 and argv[0] == "in-allocation" and argv[2] == "--":
        # The mark comes from the environment: a command line holding it (salloc's) would match.
        out, cmd, mark = argv[1], argv[3:], os.environ["GPULSE_PROCESS_MARK"]
        code = subprocess.call(cmd)
        # Processes first: srun returns only once its tasks have been reaped on their nodes.
        record = {"exit_code": code, "processes_after": processes_holding(mark)}
        record["steps_after"] = steps_once_settled()
    elif len(argv) >= 2 and argv[0] == "snapshot":
        out, urls = argv[1], argv[2:]
        power = {}
        for url in urls:
            with urllib.request.urlopen(url, timeout=10) as r:
                power[url] = [line for line in r.read().decode().splitlines()
                              if line.startswith("DCGM_FI_DEV_POWER_USAGE{")]
        record, code = {"steps": job_steps(), "power_lines": power}, 0
    else:
        print(__doc__, file=sys.stderr)
        return 2
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
