"""No object that holds a secret renders it, whatever prints it: assertion
introspection, -vv, dataclass reprs, JUnit XML."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="the hybrid extra")  # a failure under CI
from pytest_retrieval_eval._secrets import SecretText  # noqa: E402
from pytest_retrieval_eval.hybrid.store.dsn import DsnStore  # noqa: E402

PASSWORD = "pw-Secr3t-771xq"
DSN = f"postgresql://app:{PASSWORD}@/db?host=/nonexistent-dir&port=5"


def test_reprs_mask_the_password_but_the_string_still_connects_as_written():
    store = DsnStore(DSN)
    assert PASSWORD not in repr(store) and PASSWORD not in repr(store.dsn) and PASSWORD not in str(store.describe())
    assert str(store.dsn) == DSN and store.dsn == DSN  # what psycopg receives is the real DSN
    assert PASSWORD not in repr([SecretText(DSN)]) and PASSWORD not in f"{SecretText(DSN)!r}"


def test_nothing_pytest_prints_of_the_configuration_shows_the_password(pytester, tmp_path):
    pytester.makepyfile(f"""
        def test_introspection(retrieval_session):
            assert retrieval_session.config.hybrid is None

        def test_the_field_itself(retrieval_session):
            assert retrieval_session.config.hybrid.dsn == "something else"

        def test_a_fixture_repr(retrieval_session, request):
            request.node.user_properties.append(("config", repr(retrieval_session.config)))
            assert retrieval_session.config is None
    """)
    xml = tmp_path / "junit.xml"
    result = pytester.runpytest("--retrieval-store", "dsn", f"--retrieval-dsn={DSN}", "-vv", "-l",
                                f"--junitxml={xml}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str() + result.stderr.str() + xml.read_text()
    assert "app:***@" in out  # the DSN was printed, masked
    assert PASSWORD not in out
