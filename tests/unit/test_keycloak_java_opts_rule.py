"""The keycloak role's rule for keycloak_java_extra_opts (tasks/prereqs.yml,
before anything on the host changes), run on localhost: kc.sh evaluates
JAVA_OPTS_APPEND in a shell, so a value with a quote, a `$`, a `;`, a
backquote or a newline is refused with the value in the message; ordinary
JVM options pass to the next check (the host's, which fails here: no systemd
facts on localhost)."""
import pytest

from role_play import failed, role_play

BASE = {
    "keycloak_version": "26.4.7",
    "keycloak_checksum": "sha256:" + "0" * 64,
    "keycloak_archive": "",
    "keycloak_download_url": "https://example.invalid/keycloak-26.4.7.tar.gz",
}


def _first_failure(tmp_path, value):
    _out, results = role_play(tmp_path, "keycloak", "prereqs", dict(BASE, keycloak_java_extra_opts=value))
    bad = failed(results)
    assert bad, results
    return bad[0]


@pytest.mark.parametrize("value", ['-Dx="a b"', "-Dx=`id`; touch /tmp/owned$(id)", "-Da=1\n-Db=2"])
def test_shell_characters_are_refused_naming_the_field_and_value(tmp_path, value):
    name, res = _first_failure(tmp_path, value)
    assert name.endswith("Check the extra JVM options"), name
    assert "keycloak_java_extra_opts may hold letters" in res["msg"]


def test_ordinary_options_pass_to_the_host_check(tmp_path):
    name, _res = _first_failure(tmp_path, "-XX:TieredStopAtLevel=1 -Duser.timezone=UTC -Xlog:gc:file=/var/log/kc-gc.log")
    assert name.endswith("Check the host, the names and the ports"), name
