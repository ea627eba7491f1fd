"""The docker backend: one container per sandbox, the tool server as its main process, stdio over the attach socket.

A container is created with the docker SDK (``DOCKER_HOST`` honoured): no network (a loopback, the private ranges
routed to it: sandbox/netns.py; ``network=True``, only for ``bosun eval swebench --network``: the public internet
through the default bridge, nothing local), all capabilities dropped,
no-new-privileges, read-only root file system, a size-capped tmpfs at /tmp (exec, as bwrap's), an empty read-only
/sys/fs/cgroup (as in bwrap: nothing of the host's cgroups, nor the CPU quota old code takes for cores), memory ==
memory+swap, a pids limit, a CPU quota, an init (tini) as PID 1 reaping zombies, the workspace bound at /workspace
(its .git/hooks and .git/config read-only) and the tool server (its folder) bound read-only at /opt/bosun/toolserver.
Commands run as the uid:gid that owns the workspace (so files it writes stay writable on both sides), or as
``user`` when given.

The tool server's stdin/stdout are reached through the attach endpoint, opened before the container starts, so
there is no ``docker`` CLI process per sandbox. Containers carry labels (``bosun.sandbox=1``, id, owner) and
``reap_orphans()`` removes those whose owner process is gone: killing a worker must not leave containers behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

from infra.errors import UnexpectedEnvironment
from sandbox import netns, seccomp
from sandbox.base import OBJECTS_IN_SANDBOX, SANDBOX_ENV, WORKSPACE_PATH, Limits, SandboxProvider
from sandbox.client import STREAM_LIMIT, TOOLSERVER_PATH, ClientSandbox, ToolClient, pid_alive
from sandbox.gitguard import git_mounts

SERVER_IN_CONTAINER = "/opt/bosun/toolserver"
LABEL = "bosun.sandbox"
LABEL_ID = "bosun.sandbox.id"
LABEL_OWNER = "bosun.sandbox.owner"
"""``host:pid:starttime`` of the worker process that owns the container."""
DEFAULT_IMAGE = "bosun-sandbox:latest"


def _proc_starttime(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
        return raw[raw.rfind(")") + 2:].split()[19]
    except (OSError, IndexError):
        return "0"


def owner_tag(pid: int | None = None) -> str:
    """Identifies a live process across pid reuse: host name, pid and its start time."""
    pid = pid or os.getpid()
    return f"{socket.gethostname()}:{pid}:{_proc_starttime(pid)}"


def owner_alive(tag: str) -> bool | None:
    """True/False for an owner on this host; None when the owner lives on another host (not ours to judge)."""
    try:
        host, pid_s, start = tag.rsplit(":", 2)
        pid = int(pid_s)
    except ValueError:
        return False
    if host != socket.gethostname():
        return None
    return pid_alive(pid) and _proc_starttime(pid) == start


# -- the attach socket as a tool-server channel ------------------------------------------------------------------


class AttachChannel:
    """Demultiplexes docker's attach stream (8-byte frame headers: stream, size) into stdout/stderr readers."""

    def __init__(self, provider: DockerProvider, container_id: str, sock: Any) -> None:
        self.provider = provider
        self.container_id = container_id
        self.stdout = asyncio.StreamReader(limit=STREAM_LIMIT)
        self.stderr = asyncio.StreamReader(limit=1 << 20)
        self._sock = sock
        self._writer: asyncio.StreamWriter | None = None
        self._eof = False
        self._killed = False
        self._task: asyncio.Task[None] | None = None
        self._thread_write_lock = threading.Lock()

    async def open(self) -> None:
        """Start pumping frames. Plain sockets go through asyncio; TLS/other sockets through a reader thread."""
        raw = self._sock
        if isinstance(raw, socket.socket) and type(raw) is socket.socket:
            raw.setblocking(False)
            reader, self._writer = await asyncio.open_connection(sock=raw, limit=STREAM_LIMIT)
            self._task = asyncio.create_task(self._pump(reader))
        else:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=STREAM_LIMIT)
            threading.Thread(target=self._thread_reader, args=(loop, reader), daemon=True).start()
            self._task = asyncio.create_task(self._pump(reader))

    def _thread_reader(self, loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
        recv = getattr(self._sock, "recv", None) or self._sock.read
        try:
            while True:
                data = recv(65536)
                if not data:
                    break
                loop.call_soon_threadsafe(reader.feed_data, data)
        except OSError:
            pass
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(reader.feed_eof)

    async def _pump(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                header = await reader.readexactly(8)
                stream, size = struct.unpack(">BxxxL", header)
                payload = await reader.readexactly(size) if size else b""
                (self.stderr if stream == 2 else self.stdout).feed_data(payload)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            self._eof = True
            self.stdout.feed_eof()
            self.stderr.feed_eof()

    async def send(self, data: bytes) -> None:
        if self._eof:
            raise ConnectionError("the container's stdin is closed")
        if self._writer is not None:
            self._writer.write(data)
            await self._writer.drain()
        else:
            def write() -> None:
                with self._thread_write_lock:
                    self._sock.sendall(data)
            await asyncio.to_thread(write)

    def running(self) -> bool:
        return not self._eof and not self._killed

    def exit_info(self) -> str:
        if self._killed:
            return "container removed"
        return "container's tool server exited (attach stream closed)"

    async def kill(self) -> None:
        if self._killed:
            return
        self._killed = True
        await self.provider.remove_container(self.container_id)
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
        else:
            with contextlib.suppress(OSError):
                self._sock.close()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, 5.0)


# -- sandbox and provider ----------------------------------------------------------------------------------------


class DockerSandbox(ClientSandbox):
    """One container; close() removes it (and every process in it)."""

    backend = "docker"

    def __init__(self, sandbox_id: str, workspace: Path, container_id: str, client: ToolClient, user: str) -> None:
        super().__init__(sandbox_id, workspace, client, user)
        self.container_id = container_id


class DockerProvider(SandboxProvider):
    """Starts one container per ``acquire`` from ``image`` with the given limits profile.

    ``user``: "uid:gid" commands run as; default: the owner of the workspace directory. ``python``: the
    interpreter in the image that runs the tool server. ``docker_client``: a ``docker.DockerClient`` (default:
    from the environment, i.e. DOCKER_HOST).
    """

    backend = "docker"

    def __init__(self, limits: Limits | None = None, *, image: str = DEFAULT_IMAGE, user: str | None = None,
                 python: str = "python3", docker_client: Any = None, start_timeout_s: float = 30.0,
                 env: dict[str, str] | None = None, network: bool = False) -> None:
        import docker  # noqa: PLC0415 - keep the docker SDK optional for bwrap-only hosts

        self.network = network
        """The public internet through docker's default bridge, the local network out of reach
        (sandbox/netns.py: public_only); False (always, but for ``bosun eval swebench --network``): none."""

        self.env = dict(env or {})
        """More variables for the tool server (and so every command): an environment's PATH, VIRTUAL_ENV..."""
        self.limits = limits or Limits()
        self.image = image
        self.user = user
        self.python = python
        self.start_timeout_s = start_timeout_s
        try:
            self.client = docker_client or docker.from_env(timeout=60, max_pool_size=128)
            self.api = self.client.api
        except docker.errors.DockerException as exc:
            raise UnexpectedEnvironment(f"the docker engine is not reachable ({exc}); start it or set DOCKER_HOST, "
                                        f"or use the bwrap backend") from None
        self._owner = owner_tag()
        with contextlib.suppress(Exception):  # containers of workers that died on this host
            self.reap_orphans()

    # -- container spec --------------------------------------------------------------------------------------

    def user_for(self, workspace: Path) -> str:
        """The uid:gid commands run as: ``user`` if set, else the workspace directory's owner."""
        st = workspace.stat()
        return self.owner_key(st.st_uid, st.st_gid)

    def security_opt(self, user: str) -> list[str]:
        """no-new-privileges always; as root, bosun's own seccomp profile (see seccomp.docker_profile)."""
        opts = ["no-new-privileges"]
        if user.split(":")[0] in ("0", "root"):
            opts.append("seccomp=" + json.dumps(seccomp.docker_profile(), separators=(",", ":")))
        return opts

    def container_config(self, workspace: Path, sandbox_id: str, user: str, *, slot: bool = False,
                         objects: Path | None = None) -> dict[str, Any]:
        """Arguments of ``api.create_container`` (host config included). ``slot``: ``workspace`` is a workspace
        slot, bound with slave propagation so the real workspace can be mounted into it later, and ``objects``,
        if given, the slot the object store will be mounted into. ``objects``: a repository object store bound
        read-only at OBJECTS_IN_SANDBOX."""
        from docker.types import Mount, Ulimit  # noqa: PLC0415

        lim = self.limits
        mounts = [Mount(WORKSPACE_PATH, str(workspace), type="bind", read_only=False,
                        propagation="rslave" if slot else None),
                  Mount(SERVER_IN_CONTAINER, str(TOOLSERVER_PATH), type="bind", read_only=True)]
        if not slot:
            for src, dst, ro in git_mounts(workspace):
                mounts.append(Mount(dst, src, type="bind", read_only=ro))
        if objects is not None:
            mounts.append(Mount(OBJECTS_IN_SANDBOX, str(objects), type="bind", read_only=True,
                                propagation="rslave" if slot else None))
        host_config = self.api.create_host_config(
            network_mode="bridge" if self.network else "none",
            cap_drop=["ALL"],
            security_opt=self.security_opt(user),
            read_only=True,
            # exec: docker's tmpfs is noexec unless told, bwrap's is not; programs a tool call or a test builds and runs
            # in /tmp (a compiler's probe, pytest's tmp_path) must behave the same on both backends.
            # /sys/fs/cgroup empty, as in a bwrap sandbox: on a cgroup v1 host docker shows the container's CPU
            # quota there, which code of the cgroup v1 era reads as the machine's cores (pylint's _cpu_count: one
            # core, so its multi-core tests were skipped where the harness, on cgroup v2, ran them), and the
            # container's cgroups are the host's business.
            tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={lim.tmp_mb}m,mode=1777",
                   "/sys/fs/cgroup": "ro,nosuid,nodev,noexec,size=4k"},
            mem_limit=f"{lim.memory_mb}m",
            memswap_limit=f"{lim.memory_mb}m",
            pids_limit=lim.pids,
            nano_cpus=int(lim.cpus * 1e9),
            init=True,
            mounts=mounts,
            ulimits=[Ulimit(name="nofile", soft=lim.nofile, hard=lim.nofile)],
            log_config={"type": "none", "config": {}},
            ipc_mode="private",
        )
        return {
            "image": self.image,
            "command": [self.python, "-I", "-S", SERVER_IN_CONTAINER, WORKSPACE_PATH],
            "user": user,
            "working_dir": WORKSPACE_PATH,
            "environment": {**SANDBOX_ENV, **self.env},
            "labels": {LABEL: "1", LABEL_ID: sandbox_id, LABEL_OWNER: self._owner},
            "hostname": "sandbox",
            "stdin_open": True,
            "tty": False,
            # network_mode none already leaves only a loopback; keeping networking "enabled" lets docker write
            # /etc/hosts with localhost (tests bind servers to it), which network_disabled would leave empty
            "network_disabled": False,
            "host_config": host_config,
            "name": f"bosun-{sandbox_id}",
        }

    # -- lifecycle -------------------------------------------------------------------------------------------

    async def acquire(self, workspace: Path, *, objects: Path | None = None) -> DockerSandbox:
        ws = Path(workspace).resolve()
        if not ws.is_dir():
            raise UnexpectedEnvironment(f"workspace {workspace} is not a directory on this host; "
                                        f"create it (or clone the repository) before acquiring a sandbox")
        return await self._launch(ws, self.user_for(ws), slot=False, objects=objects)

    async def start_unbound(self, slot: Path, user: str, *, objects_slot: Path | None = None) -> DockerSandbox:
        """Start a container whose /workspace is ``slot`` (a workspace slot, see sandbox/slots.py), and whose
        object store, if ``objects_slot``, is that slot."""
        return await self._launch(slot, user, slot=True, objects=objects_slot)

    def pool_key(self, workspace: Path) -> str:
        """Warm sandboxes are interchangeable only for the same user."""
        return self.user_for(Path(workspace).resolve())

    def owner_key(self, uid: int, gid: int) -> str:
        """The pool key of a workspace owned by ``uid``:``gid`` (see user_for)."""
        return self.user or f"{uid}:{gid}"

    async def _launch(self, ws: Path, user: str, *, slot: bool, objects: Path | None = None) -> DockerSandbox:
        sandbox_id = f"dk-{secrets.token_hex(6)}"
        creating = asyncio.ensure_future(asyncio.to_thread(self._create_and_start, ws, sandbox_id, user, slot,
                                                           objects))
        try:
            container_id, sock = await asyncio.shield(creating)
        except asyncio.CancelledError:
            # Cancelled while the engine was creating it: wait for the container, then remove it (no leak).
            with contextlib.suppress(Exception):
                cid, orphan = await creating
                with contextlib.suppress(OSError):
                    orphan.close()
                await self.remove_container(cid)
            raise
        except UnexpectedEnvironment:
            raise
        except Exception as exc:  # noqa: BLE001 - the SDK raises many kinds; all mean "cannot start"
            raise UnexpectedEnvironment(f"docker sandbox for {ws} did not start: {type(exc).__name__}: {exc}"
                                        ) from None
        channel = AttachChannel(self, container_id, sock)
        await channel.open()
        sandbox = DockerSandbox(sandbox_id, ws, container_id,
                                ToolClient(channel, label=f"docker sandbox {sandbox_id}"), user)
        await sandbox.wait_ready(f"docker sandbox for {ws}", self.start_timeout_s)
        return sandbox

    def _create_and_start(self, ws: Path, sandbox_id: str, user: str, slot: bool, objects: Path | None = None
                          ) -> tuple[str, Any]:
        from docker.errors import ImageNotFound, NotFound  # noqa: PLC0415

        try:
            created = self.api.create_container(**self.container_config(ws, sandbox_id, user, slot=slot,
                                                                        objects=objects))
        except ImageNotFound:
            raise UnexpectedEnvironment(f"the sandbox image {self.image} is not present on the docker engine; "
                                        f"build it with sandbox/image/build.sh (or `make bootstrap`)") from None
        except NotFound as exc:
            if "image" in str(exc).lower():
                raise UnexpectedEnvironment(f"the sandbox image {self.image} is not present on the docker engine;"
                                            f" build it with sandbox/image/build.sh") from None
            raise
        cid = created["Id"]
        try:
            resp_sock = self.api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            sock = getattr(resp_sock, "_sock", resp_sock)
            self.api.start(cid)
            state = self.api.inspect_container(cid)
            if self.network:
                self._public_only(state)
            else:
                netns.blackhole_private_ranges(netns.namespace_of(state))
        except BaseException:
            with contextlib.suppress(Exception):
                self.api.remove_container(cid, force=True, v=True)
            raise
        return cid, sock

    @staticmethod
    def _public_only(state: dict[str, Any]) -> None:
        """Leave the started container (``inspect_container``'s answer) only the public internet; an
        UnexpectedEnvironment when that cannot be done (the caller removes the container)."""
        gateway, subnet, resolvers = netns.bridge_of(state)
        try:
            netns.public_only(netns.namespace_of(state), gateway, subnet, resolvers)
        except OSError as exc:
            raise UnexpectedEnvironment(f"a docker sandbox with network did not start: {exc}") from None

    async def remove_container(self, container_id: str) -> None:
        """Force-remove a container (kills its processes) with its anonymous volumes (an environment image built
        before 2026-11-26 declares two, which docker makes for every container of it); a missing container is
        fine."""
        from docker.errors import NotFound  # noqa: PLC0415

        def remove() -> None:
            for attempt in range(3):
                try:
                    self.api.remove_container(container_id, force=True, v=True)
                    return
                except NotFound:
                    return
                except Exception:  # noqa: BLE001 - "removal already in progress" and transient errors
                    if attempt == 2:
                        raise
                    time.sleep(0.2)

        with contextlib.suppress(Exception):
            await asyncio.to_thread(remove)

    def reap_orphans(self) -> list[str]:
        """Remove bosun sandbox containers whose owner process (on this host) is gone; returns their names."""
        removed = []
        for c in self.api.containers(all=True, filters={"label": f"{LABEL}=1"}):
            owner = (c.get("Labels") or {}).get(LABEL_OWNER, "")
            if owner_alive(owner) is False:
                with contextlib.suppress(Exception):
                    self.api.remove_container(c["Id"], force=True, v=True)
                    removed.append((c.get("Names") or [c["Id"]])[0].lstrip("/"))
        return removed

    def limits_report(self) -> dict[str, Any]:
        lim = self.limits
        how = "docker host config"
        return {"backend": "docker", "image": self.image,
                "memory_mb": {"value": lim.memory_mb, "enforced": True, "how": f"{how}: memory == memory+swap"},
                "pids": {"value": lim.pids, "enforced": True, "how": f"{how}: pids_limit"},
                "cpus": {"value": lim.cpus, "enforced": True, "how": f"{how}: nano_cpus"},
                "tmp_mb": {"value": lim.tmp_mb, "enforced": True, "how": "tmpfs size"},
                "nofile": {"value": lim.nofile, "enforced": True, "how": "ulimit nofile"},
                "network": {"value": "public", "enforced": True,
                            "how": "default bridge; the host, private, shared and link-local ranges, broadcast and "
                                   "multicast routed to the loopback and dropped by the namespace's packet filter, "
                                   "the resolvers on port 53 excepted (sandbox/netns.py)"}
                if self.network else
                {"value": "none", "enforced": True,
                 "how": "network_mode=none; private addresses time out (sandbox/netns.py)"},
                "user": {"value": self.user or "workspace owner", "enforced": True, "how": "container user"}}
