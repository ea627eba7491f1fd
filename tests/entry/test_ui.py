"""The web view in a real browser (Debian's headless Chromium driven by Selenium) against the stack's own web view:
the runs table, a team run's lanes, diff and test counts, steering a running task from the page, and hostile text
shown as text. Screenshots go to test-artifacts/ui/."""

from __future__ import annotations

import json
import os
import time

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import EXAMPLE, ROOT, make_example_repo, wait_for

SHOTS = ROOT / "test-artifacts" / "ui"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager look for drivers on the network
    opts = Options()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1400,1000", f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    driver.set_page_load_timeout(30)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


def ui(stack) -> str:
    return f"http://127.0.0.1:{stack.env['BOSUN_UI_PORT']}"


def shot(driver, name: str) -> None:
    driver.save_screenshot(str(SHOTS / f"{name}.png"))


@pytest.fixture(scope="module")
def team_run(stack, tmp_path_factory):
    repo = make_example_repo(tmp_path_factory.mktemp("ui") / "calc")
    proc = stack.bosun("run", "--repo", str(repo), "--model", f"scripted:{EXAMPLE / 'team.jsonl'}", "--id",
                       "ui-team", "--wait", "--json", "fix the failing tests", timeout=400)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_runs_table_and_a_team_runs_page(stack, browser, team_run):
    wait_for(lambda: httpx.get(f"{ui(stack)}/healthz").status_code == 200, 30, 0.5, "the web view")
    browser.get(f"{ui(stack)}/?status=succeeded")
    row = browser.find_element(By.XPATH, "//table[@id='runs']//tr[td/a[text()='ui-team']]")
    assert "succeeded" in row.text and "command line" in row.text and "3 failed, 4 passed" in row.text
    shot(browser, "runs")
    browser.find_element(By.LINK_TEXT, "ui-team").click()
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "timeline")))
    lanes = {e.text: e for e in browser.find_elements(By.CSS_SELECTOR, ".lane-agent")}
    assert set(lanes) == {"planner", "fast_edit-median-1", "fast_edit-percent-1", "debugger-1"}
    # the two fast-edit agents ran at the same time: two lanes; the planner and the debugger come before and after
    tops = {name: e.value_of_css_property("top") for name, e in lanes.items()}
    assert tops["fast_edit-median-1"] != tops["fast_edit-percent-1"]
    lefts = {name: float(e.get_attribute("style").split("left: ")[1].split("%")[0]) for name, e in lanes.items()}
    assert lefts["planner"] < lefts["fast_edit-median-1"] < lefts["debugger-1"]
    phases = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".phase")]
    assert phases[0] == "prepare" and "plan" in phases and "wave 1" in phases and "verify" in phases
    assert browser.find_element(By.CSS_SELECTOR, "#tests .before").text.startswith("3 failed, 4 passed")
    assert browser.find_element(By.CSS_SELECTOR, "#tests .after").text.startswith("7 passed")
    files = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#diff details.file summary")]
    assert files == ["calc/report.py", "calc/stats.py"]
    inserted = browser.find_elements(By.CSS_SELECTOR, "#diff .highlight .gi")  # Pygments: inserted lines
    assert any("return (ordered[middle - 1] + ordered[middle]) / 2" in e.text for e in inserted)
    # an agent's steps: a tool call folded, its arguments and result inside
    lane = browser.find_element(By.CSS_SELECTOR, "a.lane-agent[title^='fast_edit-median-1']")
    agent = browser.find_element(By.ID, lane.get_attribute("href").split("#")[1])
    lane.click()
    assert "fast_edit-median-1" in agent.find_element(By.TAG_NAME, "summary").text
    browser.execute_script("arguments[0].open = true", agent)
    tool = agent.find_elements(By.CSS_SELECTOR, "details.tool")[1]
    browser.execute_script("arguments[0].open = true", tool)
    assert "str_replace" in tool.text and "calc/stats.py" in tool.text and "edited calc/stats.py" in tool.text
    shot(browser, "run-team")
    assert "Content-Security-Policy" in httpx.get(f"{ui(stack)}/run?id=ui-team").headers


def test_steer_a_running_task_from_its_page(stack, browser, tmp_path, example_repo):
    turns = [{"content": "Looking around first.", "tool_calls": [{"name": "run_command", "arguments": {
                 "command": "sleep 20 && echo looked"}}]},
             {"content": "Done.", "expect": [{"tool": "run_command", "contains": "looked"}]}]
    traj = tmp_path / "slow.jsonl"
    traj.write_text("".join(json.dumps(t) + "\n" for t in turns))
    proc = stack.bosun("run", "--repo", str(example_repo), "--model", f"scripted:{traj}", "--id", "ui-steer",
                       "--mode", "solo", "look around")
    assert proc.returncode == 0, proc.stderr
    browser.get(f"{ui(stack)}/run?id=ui-steer")
    box = WebDriverWait(browser, 30).until(ec.presence_of_element_located((By.NAME, "message")))
    box.send_keys("please also check the README")
    shot(browser, "steer-before")
    browser.find_element(By.ID, "steer-button").click()
    WebDriverWait(browser, 20).until(ec.url_contains("/run?id=ui-steer"))

    def done() -> bool:
        # read in one script call: the page replaces its body every 2 s, so a found element can go stale before .text
        return "running" not in browser.execute_script("return document.getElementById('run-status').textContent")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not done():
        time.sleep(1)  # the page refreshes itself while the run goes on
    assert done(), "the run page never showed the run's end"
    steering = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".steering")]
    assert steering == ["message from a person: please also check the README"]
    shot(browser, "steer-after")
    history = json.loads(stack.bosun("history", "ui-steer", "--json").stdout)
    agent = next(c for c in history["children"] if c["kind"] == "child")
    calls = [c["input"] for c in agent["children"] if c["name"] == "model_call"]
    # it reached exactly one model call (the first one when the agent had not started yet, else the next one)
    assert sum(c["user_messages"].count("please also check the README") for c in calls) == 1


HOSTILE = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"


def test_hostile_text_is_shown_as_text(stack, browser, tmp_path, example_repo):
    turns = [{"content": f"Reading. {HOSTILE}", "tool_calls": [
                {"name": "run_command", "arguments": {"command": f"printf '%s\\n' '{HOSTILE}'"}},
                {"name": "write_file", "arguments": {"path": "docs/<img src=x onerror=alert(3)>.md",
                                                      "content": f"{HOSTILE}\n"}}]},
             {"content": f"</pre></details>{HOSTILE}"}]
    traj = tmp_path / "hostile.jsonl"
    traj.write_text("".join(json.dumps(t) + "\n" for t in turns))
    proc = stack.bosun("run", "--repo", str(example_repo), "--model", f"scripted:{traj}", "--id", "ui-hostile",
                       "--mode", "solo", "--wait", "--json", f"fix it {HOSTILE}", timeout=300)
    assert proc.stdout.strip(), proc.stderr
    assert json.loads(proc.stdout)["files_changed"], proc.stderr
    browser.get(f"{ui(stack)}/run?id=ui-hostile")
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "agents")))
    for d in browser.find_elements(By.CSS_SELECTOR, "details"):
        browser.execute_script("arguments[0].open = true", d)
    time.sleep(0.5)
    assert browser.execute_script("return window.__pwned === undefined"), "hostile text ran as script"
    assert browser.find_elements(By.CSS_SELECTOR, "img") == []
    text = browser.find_element(By.TAG_NAME, "body").text
    assert HOSTILE in text  # shown, literally, several times
    assert "docs/<img src=x onerror=alert(3)>.md" in text
    shot(browser, "hostile")
    browser.get(f"{ui(stack)}/")
    assert browser.execute_script("return window.__pwned === undefined")


def test_changes_must_come_from_the_page(stack):
    refused = httpx.post(f"{ui(stack)}/run/cancel", data={"id": "ui-team"})
    assert refused.status_code == 403
    other = httpx.post(f"{ui(stack)}/run/cancel", data={"id": "ui-team"}, headers={"Origin": "http://evil.example"})
    assert other.status_code == 403


def test_a_token_is_required_beyond_loopback(stack):
    proc = stack.bosun("ui", env_extra={"BOSUN_UI_HOST": "0.0.0.0"}, timeout=30)
    assert proc.returncode == 2 and "set BOSUN_UI_TOKEN" in proc.stderr



def test_unknown_empty_and_hostile_ids_get_a_clear_answer(stack):
    base = ui(stack)
    for path in ("/run?id=", "/run?id=no-such-run", "/run/fragment?id=no-such-run",
                 "/run?id=%3Cscript%3Ex%3C/script%3E", "/trace?id=%3Cscript%3Ex%3C/script%3E",
                 "/export?id=no-such-run"):
        r = httpx.get(base + path, timeout=30)
        assert r.status_code in (200, 404), (path, r.status_code, r.text[:200])
        assert "<script>x" not in r.text, path  # shown as text, never as markup
        if path.startswith("/run?id=no-such"):
            assert r.status_code == 404 and "no run &#39;no-such-run&#39;" in r.text
    refused = httpx.post(f"{base}/run/steer", data={"id": "no-such-run", "message": "hi"},
                         headers={"Origin": base}, timeout=30)
    assert refused.status_code == 409 and "could not do it" in refused.text
