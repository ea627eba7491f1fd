"""The setup.py reader (environments/setuppy.py) on hostile scripts: bounded in time and memory."""

from __future__ import annotations

import time

from environments.setuppy import read_setup_py


def test_self_doubling_names_are_memoised_and_capped():
    lists = "x = ['a']\n" + "x = [x, x]\n" * 60 + "setup(name='d', install_requires=x)\n"
    chain = "a0 = 'ab'\n" + "".join(f"a{i + 1} = a{i} + a{i}\n" for i in range(22)) + \
        "setup(name='d', install_requires=a22, tests_require=['pytest'])\n"
    lists_chain = "b0 = ['r']\n" + "".join(f"b{i + 1} = b{i} + b{i}\n" for i in range(22)) + \
        "c = [b22, b22]\nsetup(name='d', extras_require={'t': b22}, install_requires=['six'])\n"
    tree = "t0 = ['r']\n" + "".join(f"t{i + 1} = [t{i}, t{i}]\n" for i in range(64)) + \
        "setup(name='d', classifiers=t64, install_requires=['six'])\n"
    for source in (lists, chain, lists_chain, tree):
        started = time.monotonic()
        facts = read_setup_py(source)
        assert time.monotonic() - started < 5, source[:40]
        assert facts.found
    assert read_setup_py(chain).tests_require == ["pytest"]
    assert any("install_requires is too large to evaluate" in n for n in read_setup_py(chain).notes)
    assert read_setup_py(lists_chain).install_requires == ["six"]
    assert any("too large" in n for n in read_setup_py(lists_chain).notes)


def test_literal_names_still_resolve():
    facts = read_setup_py("base = ['a']\ntest = base + ['b']\nsetup(name='d', install_requires=base, "
                          "extras_require=dict(test=test))\n")
    assert facts.install_requires == ["a"] and facts.extras_require == {"test": ["a", "b"]}
