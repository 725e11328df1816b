"""The chat page `kiln serve` serves at /, driven in headless Chromium (Debian's
chromium + chromium-driver, selenium from PyPI): a typed question gets a streamed
answer, the conversation survives a reload (it is kept in the browser), and the
stop button ends a reply and frees the server's slot."""
import re
import shutil
import time
import urllib.request

import pytest

from test_cli_generate import cached_default_model
from test_serve import start_server
from io_util import kiln_cli

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402


@pytest.fixture(scope="module")
def page():
    model = cached_default_model()
    if model is None or kiln_cli() is None:
        pytest.skip("needs the kiln CLI and the default model (scripts/test fetches it)")
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("needs Debian's chromium and chromium-driver (scripts/test installs them)")
    p, port = start_server(model)
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(a)
    browser = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=driver))
    browser.get(f"http://127.0.0.1:{port}/")
    yield browser, port
    browser.quit()
    p.terminate()
    p.wait(timeout=30)


def set_field(browser, id_, value):
    el = browser.find_element(By.ID, id_)
    el.clear()
    el.send_keys(str(value))
    browser.execute_script("arguments[0].dispatchEvent(new Event('change'))", el)


def assistant_texts(browser):
    return [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".msg.assistant span")]


def cancelled(port):
    m = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    return int(re.search(r"^kiln_requests_cancelled_total (\d+)$", m, re.M).group(1))


def test_question_gets_a_streamed_answer(page):
    browser, _ = page
    assert browser.title == "kiln chat"
    set_field(browser, "temperature", 0)
    set_field(browser, "max_tokens", 48)
    box = browser.find_element(By.ID, "input")
    box.send_keys("What is the capital of France?")
    box.send_keys(Keys.ENTER)
    lengths = set()
    deadline = time.time() + 60
    while time.time() < deadline:
        texts = assistant_texts(browser)
        if texts:
            lengths.add(len(texts[-1]))
        if texts and texts[-1] and browser.find_element(By.ID, "stop").get_attribute("disabled"):
            break
        time.sleep(0.01)
    answer = assistant_texts(browser)[-1]
    assert "Paris" in answer
    assert len(lengths - {0}) >= 2, lengths  # it grew piece by piece
    # Kept in the browser: a reload shows the same conversation.
    browser.refresh()
    msgs = browser.find_elements(By.CSS_SELECTOR, ".msg span")
    assert [m.text for m in msgs] == ["What is the capital of France?", answer]


def test_stop_button_ends_the_reply(page):
    browser, port = page
    set_field(browser, "max_tokens", 2000)
    stop = browser.find_element(By.ID, "stop")
    # A prompt whose reply runs long: "count to a thousand" got a ~30-character
    # reply at temperature 0 that often ended before the click landed (nothing
    # left to cancel). Up to three replies are tried, and one of them must be
    # stopped mid-way and counted as cancelled by the server.
    for _ in range(3):
        before = cancelled(port)
        box = browser.find_element(By.ID, "input")
        box.send_keys("Write a long story, at least five hundred words, about a lighthouse keeper and a storm.")
        box.send_keys(Keys.ENTER)
        deadline = time.time() + 30
        while time.time() < deadline and len(assistant_texts(browser)[-1]) < 20 and stop.is_enabled():
            time.sleep(0.02)
        if not stop.is_enabled():
            continue  # the reply already ended
        stop.click()
        time.sleep(0.5)
        n = len(assistant_texts(browser)[-1])
        time.sleep(1.0)
        assert len(assistant_texts(browser)[-1]) == n  # no more text arrives
        deadline = time.time() + 10
        while time.time() < deadline and cancelled(port) == before:
            time.sleep(0.05)
        if cancelled(port) == before + 1:
            break
    else:
        pytest.fail("no reply was stopped mid-way and counted as cancelled in three tries")
    # "New chat" forgets the conversation.
    browser.find_element(By.ID, "new").click()
    assert browser.find_elements(By.CSS_SELECTOR, ".msg") == []
