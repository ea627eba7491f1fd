"""bus.connect_nats against real nats-servers that ask for a user and password, a token, a credentials file
(operator mode) or TLS with client certificates: the right settings connect (and JetStream works through them);
a wrong or missing one is one clear ConfigError naming the settings to check, without the secret."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import nkeys
import pytest
from pydantic import SecretStr

from infra import devcerts
from infra.errors import ConfigError
from infra.events import bus
from infra.events.config import load_events_config
from infra.privatestack import free_port
from infra.settings import Settings

SECRET = "s3cret-never-shown"


class ConfiguredNats:
    """A nats-server started from a configuration text (``{port}`` is its client port)."""

    def __init__(self, folder: Path, config: str) -> None:
        self.port = free_port()
        folder.mkdir(parents=True, exist_ok=True)
        conf = folder / f"nats-{self.port}.conf"
        conf.write_text(f'listen: "127.0.0.1:{self.port}"\n' + config)
        self.log = folder / f"nats-{self.port}.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(["nats-server", "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while "Server is ready" not in self.log.read_text():
            assert self.proc.poll() is None and time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.05)

    def url(self, scheme: str = "nats") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def servers(tmp_path):
    started: list[ConfiguredNats] = []

    def start(config: str) -> ConfiguredNats:
        started.append(ConfiguredNats(tmp_path / "nats", config))
        return started[-1]

    yield start
    for s in started:
        s.stop()


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")
    ca = devcerts.make_ca(d / "ca")
    wrong = devcerts.make_ca(d / "wrong", "wrong-ca")
    return {"ca": ca, "server": devcerts.issue(ca, d / "ca", "server"),
            "client": devcerts.issue(ca, d / "ca", "client", server=False), "wrong_ca": wrong,
            "wrong_client": devcerts.issue(wrong, d / "wrong", "client", server=False)}


async def _refused(settings: Settings) -> str:
    with pytest.raises(ConfigError) as e:
        await bus.connect_nats(settings, name="test")
    text = str(e.value)
    assert SECRET not in text and "\n" not in text
    return text


async def _works(settings: Settings) -> None:
    """Connected, and JetStream answers through the connection when the server has it."""
    nc = await bus.connect_nats(settings, name="test")
    try:
        assert nc.is_connected
        sub = await nc.subscribe("probe")
        await nc.publish("probe", b"x")
        assert (await sub.next_msg(timeout=2)).data == b"x"
    finally:
        await nc.close()


async def test_user_and_password(servers, tmp_path):
    srv = servers(f'jetstream {{ store_dir: "{tmp_path / "js"}" }}\n'
                  f'authorization {{ user: "bob", password: "{SECRET}" }}\n')
    good = Settings(data_dir=tmp_path, nats_url=srv.url(), nats_user="bob", nats_password=SECRET)
    await _works(good)
    nc = await bus.connect_nats(good, name="test")  # JetStream through an authenticated connection
    try:
        await bus.ensure_events_stream(nc.jetstream(), load_events_config(good))
        assert (await nc.jetstream().stream_info("EVENTS")).config.num_replicas == 1
    finally:
        await nc.close()
    assert await _refused(good.model_copy(update={"nats_password": SecretStr("wrong")})) == (
        f"NATS at {srv.url()} refused the credentials: check BOSUN_NATS_USER and BOSUN_NATS_PASSWORD")
    assert await _refused(Settings(data_dir=tmp_path, nats_url=srv.url())) == (
        f"NATS at {srv.url()} requires credentials: set BOSUN_NATS_USER and BOSUN_NATS_PASSWORD, BOSUN_NATS_TOKEN "
        "or BOSUN_NATS_CREDS")


async def test_token(servers, tmp_path):
    srv = servers(f'authorization {{ token: "{SECRET}" }}\n')
    await _works(Settings(data_dir=tmp_path, nats_url=srv.url(), nats_token=SECRET))
    assert await _refused(Settings(data_dir=tmp_path, nats_url=srv.url(), nats_token="wrong")) == (
        f"NATS at {srv.url()} refused the credentials: check BOSUN_NATS_TOKEN")


async def test_tls_with_client_certificates(servers, tmp_path, certs):
    srv = servers(f'tls {{ cert_file: "{certs["server"].cert}", key_file: "{certs["server"].key}", '
                  f'ca_file: "{certs["ca"].cert}", verify: true, timeout: 2 }}\n')
    good = Settings(data_dir=tmp_path, nats_url=srv.url("tls"), nats_tls_ca=certs["ca"].cert,
                    nats_tls_cert=certs["client"].cert, nats_tls_key=certs["client"].key)
    await _works(good)
    await _works(good.model_copy(update={"nats_url": srv.url("nats")}))  # the server asks for TLS: upgraded
    assert await _refused(good.model_copy(update={"nats_tls_ca": certs["wrong_ca"].cert})) == (
        "the NATS server's certificate is not signed by a trusted authority: check BOSUN_NATS_TLS_CA (the PEM file "
        "of the authority that signed it)")
    no_cert = f"NATS at {srv.url('tls')} did not accept this host's client certificate: check BOSUN_NATS_TLS_CERT " \
              "and BOSUN_NATS_TLS_KEY (mutual TLS)"
    assert await _refused(good.model_copy(update={"nats_tls_cert": None, "nats_tls_key": None})) == no_cert
    assert await _refused(good.model_copy(update={"nats_tls_cert": certs["wrong_client"].cert,
                                                  "nats_tls_key": certs["wrong_client"].key})) == no_cert
    assert await _refused(good.model_copy(update={"nats_tls_key": certs["wrong_client"].key})) == (
        "BOSUN_NATS_TLS_KEY is not the private key of BOSUN_NATS_TLS_CERT")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _keypair(prefix: int) -> tuple[bytes, nkeys.KeyPair, str]:
    seed = nkeys.encode_seed(os.urandom(32), prefix)
    kp = nkeys.from_seed(bytearray(seed))
    return seed, kp, kp.public_key.decode()


def _jwt(claims: dict, signer: nkeys.KeyPair) -> str:
    header = _b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    claims = {"iat": int(time.time()), **claims}
    claims["jti"] = base64.b32encode(hashlib.sha256(json.dumps(claims).encode()).digest()).decode().rstrip("=")
    payload = _b64(json.dumps(claims).encode())
    return f"{header}.{payload}.{_b64(signer.sign(f'{header}.{payload}'.encode()))}"


def _operator(folder: Path) -> tuple[str, Path, Path]:
    """An operator, an account and a user of it (what `nsc` makes): the server's configuration, the user's
    credentials file, and the credentials of a user of an account the server does not know."""
    _, op, op_pub = _keypair(nkeys.PREFIX_BYTE_OPERATOR)
    op_jwt = _jwt({"iss": op_pub, "sub": op_pub, "name": "op", "nats": {"type": "operator", "version": 2}}, op)
    limits = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": True, "conn": -1,
              "leaf": -1}
    accounts, creds = {}, []
    for name in ("known", "unknown"):
        _, acc, acc_pub = _keypair(nkeys.PREFIX_BYTE_ACCOUNT)
        accounts[acc_pub] = _jwt({"iss": op_pub, "sub": acc_pub, "name": name, "nats": {
            "limits": limits, "default_permissions": {"pub": {}, "sub": {}}, "type": "account", "version": 2}}, op)
        user_seed, _, user_pub = _keypair(nkeys.PREFIX_BYTE_USER)
        user_jwt = _jwt({"iss": acc_pub, "sub": user_pub, "name": "u", "nats": {
            "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1, "type": "user", "version": 2}}, acc)
        path = folder / f"{name}.creds"
        path.write_text(f"-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n"
                        f"-----BEGIN USER NKEY SEED-----\n{user_seed.decode()}\n------END USER NKEY SEED------\n")
        path.chmod(0o600)
        creds.append(path)
    (folder / "op.jwt").write_text(op_jwt)
    known = next(iter(accounts))
    config = (f'operator: "{folder / "op.jwt"}"\nresolver: MEMORY\n'
              f'resolver_preload: {{ {known}: "{accounts[known]}" }}\n')
    return config, creds[0], creds[1]


async def test_credentials_file(servers, tmp_path):
    config, creds, stranger = _operator(tmp_path)
    srv = servers(config)
    await _works(Settings(data_dir=tmp_path, nats_url=srv.url(), nats_creds=creds))
    assert await _refused(Settings(data_dir=tmp_path, nats_url=srv.url(), nats_creds=stranger)) == (
        f"NATS at {srv.url()} refused the credentials: check BOSUN_NATS_CREDS")


async def test_servers_that_do_not_answer_are_a_connection_error_and_one_live_server_is_enough(servers, tmp_path):
    down = [f"nats://127.0.0.1:{free_port()}" for _ in range(2)]
    with pytest.raises(ConnectionError, match="cannot reach NATS at nats://127.0.0.1:"):
        await bus.connect_nats(Settings(data_dir=tmp_path, nats_url=",".join(down)), name="test")
    srv = servers("")
    await _works(Settings(data_dir=tmp_path, nats_url=",".join([*down, srv.url()])))


async def test_replicas_on_a_server_outside_a_cluster_are_refused_clearly(servers, tmp_path):
    srv = servers(f'jetstream {{ store_dir: "{tmp_path / "js"}" }}\n')
    s = Settings(data_dir=tmp_path, nats_url=srv.url(), nats_replicas=3)
    nc = await bus.connect_nats(s, name="test")
    try:
        js = nc.jetstream()
        cfg = load_events_config(s)
        with pytest.raises(ConfigError, match="NATS cannot keep 3 replicas of EVENTS: the server is not part of a "
                                              "cluster; set BOSUN_NATS_REPLICAS=1"):
            await bus.ensure_events_stream(js, cfg)
        with pytest.raises(ConfigError, match="NATS cannot keep 3 replicas of KV_bosun-deliveries"):
            await bus.Ledger.open(js, cfg)
        with pytest.raises(Exception):  # noqa: B017 - nothing was made
            await js.stream_info("EVENTS")
    finally:
        await nc.close()
