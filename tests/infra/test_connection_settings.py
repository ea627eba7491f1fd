"""The settings that connect bosun to secured, clustered engines (Temporal TLS and API key, NATS servers,
credentials, TLS and replicas): each bad value is one line naming the setting, never a secret; `bosun settings`
shows no secret."""

from __future__ import annotations

import pytest

from infra import devcerts
from infra.errors import ConfigError
from infra.privatestack import held_port
from infra.settings import Settings, load_settings, parse_nats_servers, redact_url
from tests.conftest import bosun

SECRET = "hunter2-never-shown"


@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    d = tmp_path_factory.mktemp("pem")
    ca = devcerts.make_ca(d)
    client = devcerts.issue(ca, d, "client", server=False)
    encrypted = d / "encrypted.key"
    encrypted.write_text("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n")
    creds = d / "user.creds"
    creds.write_text("-----BEGIN NATS USER JWT-----\neyJ0eXAi\n------END NATS USER JWT------\n\n"
                     "-----BEGIN USER NKEY SEED-----\nSUAM\n------END USER NKEY SEED------\n")
    (d / "not.pem").write_text("hello\n")
    return {"ca": ca.cert, "cert": client.cert, "key": client.key, "encrypted": encrypted, "creds": creds,
            "not_pem": d / "not.pem", "dir": d}


def _error(monkeypatch, env: dict[str, str]) -> str:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError) as e:
        load_settings()
    text = str(e.value)
    assert "\n" not in text and SECRET not in text and "Traceback" not in text
    return text


def test_bad_values_are_one_clear_line_naming_the_setting(monkeypatch, pem):
    cases = [
        ({"BOSUN_TEMPORAL_TLS": "maybe"}, "BOSUN_TEMPORAL_TLS='maybe' is invalid: Input should be a valid boolean"),
        ({"BOSUN_TEMPORAL_TLS_CA": str(pem["dir"] / "nope.pem")},
         "BOSUN_TEMPORAL_TLS_CA='" + str(pem["dir"] / "nope.pem") + "' is invalid: no such file"),
        ({"BOSUN_TEMPORAL_TLS_CA": str(pem["dir"])}, "is invalid: is a directory (expected a PEM certificate file)"),
        ({"BOSUN_TEMPORAL_TLS_CA": str(pem["not_pem"])}, "BOSUN_TEMPORAL_TLS_CA='" + str(pem["not_pem"])
         + "' is invalid: not a PEM certificate file"),
        ({"BOSUN_TEMPORAL_TLS_CERT": str(pem["key"]), "BOSUN_TEMPORAL_TLS_KEY": str(pem["key"])},
         "BOSUN_TEMPORAL_TLS_CERT='" + str(pem["key"]) + "' is invalid: not a PEM certificate file"),
        ({"BOSUN_TEMPORAL_TLS_CERT": str(pem["cert"]), "BOSUN_TEMPORAL_TLS_KEY": str(pem["cert"])},
         "BOSUN_TEMPORAL_TLS_KEY='" + str(pem["cert"]) + "' is invalid: not a PEM private key file"),
        ({"BOSUN_TEMPORAL_TLS_CERT": str(pem["cert"]), "BOSUN_TEMPORAL_TLS_KEY": str(pem["encrypted"])},
         "the private key is encrypted with a passphrase"),
        ({"BOSUN_TEMPORAL_TLS_CERT": str(pem["cert"])},
         "BOSUN_TEMPORAL_TLS_CERT is set but BOSUN_TEMPORAL_TLS_KEY is not: they go together"),
        ({"BOSUN_TEMPORAL_TLS_KEY": str(pem["key"])},
         "BOSUN_TEMPORAL_TLS_KEY is set but BOSUN_TEMPORAL_TLS_CERT is not: they go together"),
        ({"BOSUN_TEMPORAL_TLS": "off", "BOSUN_TEMPORAL_TLS_CA": str(pem["ca"])},
         "BOSUN_TEMPORAL_TLS=off, but BOSUN_TEMPORAL_TLS_CA is set"),
        ({"BOSUN_TEMPORAL_TLS": "off", "BOSUN_TEMPORAL_TLS_SERVER_NAME": "temporal.example.com"},
         "BOSUN_TEMPORAL_TLS=off, but BOSUN_TEMPORAL_TLS_SERVER_NAME is set"),
        ({"BOSUN_NATS_URL": f"http://bob:{SECRET}@nats.example.com:4222"},
         "BOSUN_NATS_URL='http://***@nats.example.com:4222' is invalid: http://***@nats.example.com:4222: the scheme"),
        ({"BOSUN_NATS_URL": f"nats://n1:4222,nats://bob:{SECRET}@n2:42x"}, "nats://***@n2:42x: the port is not a"),
        ({"BOSUN_NATS_URL": "nats://n1:4222,ws://n2:8080"}, "cannot be mixed"),
        ({"BOSUN_NATS_URL": " , "}, "BOSUN_NATS_URL=',' is invalid: no server: expected nats://host:port"),
        ({"BOSUN_NATS_URL": "  "}, None),  # blank: unset (the embedded server)
        ({"BOSUN_NATS_USER": "bob"}, "BOSUN_NATS_USER is set but BOSUN_NATS_PASSWORD is not: they go together"),
        ({"BOSUN_NATS_PASSWORD": SECRET}, "BOSUN_NATS_PASSWORD is set but BOSUN_NATS_USER is not"),
        ({"BOSUN_NATS_TOKEN": SECRET, "BOSUN_NATS_USER": "bob", "BOSUN_NATS_PASSWORD": SECRET},
         "BOSUN_NATS_USER and BOSUN_NATS_TOKEN are different ways to authenticate to NATS: set one of them"),
        ({"BOSUN_NATS_TOKEN": SECRET, "BOSUN_NATS_CREDS": str(pem["creds"])},
         "BOSUN_NATS_TOKEN and BOSUN_NATS_CREDS are different ways"),
        ({"BOSUN_NATS_CREDS": str(pem["cert"])}, "BOSUN_NATS_CREDS='" + str(pem["cert"])
         + "' is invalid: not a PEM NATS credentials file"),
        ({"BOSUN_NATS_TLS_CA": str(pem["not_pem"])}, "BOSUN_NATS_TLS_CA='" + str(pem["not_pem"]) + "' is invalid"),
        ({"BOSUN_NATS_TLS_CERT": str(pem["cert"])}, "BOSUN_NATS_TLS_CERT is set but BOSUN_NATS_TLS_KEY is not"),
        ({"BOSUN_NATS_REPLICAS": "0"}, "BOSUN_NATS_REPLICAS='0' is invalid: Input should be greater than or equal to "
                                       "1"),
        ({"BOSUN_NATS_REPLICAS": "6", "BOSUN_NATS_URL": "nats://n1:4222"}, "less than or equal to 5"),
        ({"BOSUN_NATS_REPLICAS": "three"}, "BOSUN_NATS_REPLICAS='three' is invalid"),
        ({"BOSUN_NATS_REPLICAS": "3"}, "BOSUN_NATS_REPLICAS=3 needs a NATS cluster (BOSUN_NATS_URL listing its "
                                       "servers)"),
    ]
    for env, expected in cases:
        with monkeypatch.context() as m:
            if expected is None:
                for k, v in env.items():
                    m.setenv(k, v)
                assert load_settings().nats_url is None
                continue
            text = _error(m, env)
            assert expected in text, (env, text)
            assert text.startswith("BOSUN_"), text


def test_good_values_and_what_they_turn_on(monkeypatch, pem):
    monkeypatch.setenv("BOSUN_TEMPORAL_API_KEY", SECRET)
    s = load_settings()
    assert s.temporal_tls_on  # an API key turns TLS on, as Temporal Cloud needs
    monkeypatch.setenv("BOSUN_TEMPORAL_TLS", "off")
    assert not load_settings().temporal_tls_on  # unless TLS is said off (a proxy on loopback)
    monkeypatch.delenv("BOSUN_TEMPORAL_API_KEY")
    monkeypatch.delenv("BOSUN_TEMPORAL_TLS")
    assert not load_settings().temporal_tls_on  # the embedded dev server: plain
    for k, v in {"BOSUN_TEMPORAL_TLS_CA": pem["ca"], "BOSUN_TEMPORAL_TLS_CERT": pem["cert"],
                 "BOSUN_TEMPORAL_TLS_KEY": pem["key"], "BOSUN_NATS_CREDS": pem["creds"],
                 "BOSUN_NATS_URL": f" nats://bob:{SECRET}@n1:4222, n2:4223 ,tls://n3", "BOSUN_NATS_REPLICAS": "3"
                 }.items():
        monkeypatch.setenv(k, str(v))
    s = load_settings()
    assert s.temporal_tls_on and s.nats_replicas == 3
    assert s.nats_servers == [f"nats://bob:{SECRET}@n1:4222", "nats://n2:4223", "tls://n3"]
    assert s.nats_display == "nats://***@n1:4222,nats://n2:4223,tls://n3"


def test_urls_are_redacted_and_parsed():
    assert redact_url("nats://user:pw@h:1") == "nats://***@h:1"
    assert redact_url("tls://token@h") == "tls://***@h"
    assert redact_url("nats://h:1/x@y") == "nats://h:1/x@y"
    assert parse_nats_servers("h1:4222") == ["nats://h1:4222"]
    with pytest.raises(ValueError, match="no server"):
        parse_nats_servers(",")


def test_bosun_settings_shows_no_secret(pem, tmp_path):
    env = {"BOSUN_DATA_DIR": str(tmp_path), "BOSUN_TEMPORAL_API_KEY": SECRET, "BOSUN_NATS_PASSWORD": SECRET,
           "BOSUN_NATS_USER": "bob", "BOSUN_NATS_URL": f"nats://carol:{SECRET}@n1:4222,nats://n2:4222",
           "BOSUN_NATS_REPLICAS": "3", "BOSUN_TEMPORAL_TLS_CERT": str(pem["cert"]),
           "BOSUN_TEMPORAL_TLS_KEY": str(pem["key"]), "BOSUN_TEMPORAL_TLS_CA": str(pem["ca"])}
    proc = bosun("settings", env=env, check=True)
    assert SECRET not in proc.stdout + proc.stderr
    shown = dict(line.split("=", 1) for line in proc.stdout.splitlines())
    assert shown["BOSUN_TEMPORAL_API_KEY"] == "***" and shown["BOSUN_NATS_PASSWORD"] == "***"
    assert shown["BOSUN_NATS_URL"] == "nats://***@n1:4222,nats://n2:4222"
    assert shown["BOSUN_TEMPORAL_TLS_KEY"] == str(pem["key"])  # a path, not the key
    assert shown["BOSUN_NATS_TOKEN"] == "None" and shown["BOSUN_NATS_USER"] == "bob"


def test_a_bad_setting_stops_the_cli_with_one_line(tmp_path):
    proc = bosun("status", env={"BOSUN_DATA_DIR": str(tmp_path), "BOSUN_NATS_PASSWORD": SECRET})
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("bosun: BOSUN_NATS_PASSWORD is set but BOSUN_NATS_USER is not: they go together "
                                   "(set both, or neither)")
    assert SECRET not in proc.stdout + proc.stderr


def test_a_temporal_that_does_not_answer_is_said_in_plain_words(tmp_path):
    """Nothing listens at the configured port: one line naming the address, the reason in plain words (not the
    transport library's error cut mid-word) and what to do."""
    with held_port() as port:
        proc = bosun("inspect", "some-run", env={"BOSUN_DATA_DIR": str(tmp_path), "BOSUN_TEMPORAL_PORT": str(port)})
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert line == (f"bosun: cannot reach Temporal at 127.0.0.1:{port} (nothing listens there: connection refused); "
                    "start the embedded stack with `bosun up`, or set BOSUN_TEMPORAL_ADDRESS"), line
    assert "tonic" not in line and "\n" not in line


@pytest.mark.parametrize("port", [29403, 14010, 30401])
def test_a_port_that_spells_a_status_code_is_not_taken_for_one(port):
    """The address is not part of what classifies an error: connection refused at port 29403 is not a 403."""
    from infra.temporal import explain
    s = Settings(host="127.0.0.1", temporal_port=port)
    error = RuntimeError(f"Failed client connect: Server connection error: tonic::transport::Error(Transport, "
                         f"ConnectError(ConnectError(\"tcp connect error\", 127.0.0.1:{port}, Os {{ code: 111, "
                         f"kind: ConnectionRefused, message: \"Connection refused\" }})))")
    assert explain(error, s).startswith(f"cannot reach Temporal at 127.0.0.1:{port} (nothing listens there")
    assert "refused the credentials" in explain(RuntimeError("status: Unauthenticated, 401"), s)


def test_connection_errors_in_plain_words():
    from infra.temporal import plain_reason
    assert plain_reason(TimeoutError()) == "no answer in time"
    assert plain_reason(RuntimeError('Failed client connect: dns error: failed to lookup address information')) \
        == "its host name does not resolve"
    long = RuntimeError("Failed client connect: " + "word " * 100)
    assert plain_reason(long).endswith(" ...") and len(plain_reason(long)) <= 164
