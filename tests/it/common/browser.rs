//! A headless Chromium for the browser tests, driven over the DevTools protocol: one
//! page, its console errors and uncaught exceptions, and every request it makes.
//!
//! Needs Debian's `chromium` (or `TVBO_CHROMIUM=path`); `.ci/run` installs it. Without
//! it [`Browser::launch`] says so and returns None (the test skips), except under CI,
//! where it fails. The browser resolves no host name, so a page can reach nothing but
//! the loopback test server.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// A headless Chromium with one page, spoken to over its DevTools websocket.
pub struct Browser {
    child: Child,
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    /// Console errors and uncaught exceptions seen since the last [`Browser::open`].
    pub errors: Vec<String>,
    /// Every request the page made since the last [`Browser::open`], as DevTools tells
    /// it (`url`, `method`, `headers`).
    pub requests: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn executable() -> Option<String> {
        if let Ok(path) = std::env::var("TVBO_CHROMIUM") {
            return Some(path);
        }
        ["chromium", "chromium-browser", "google-chrome"]
            .into_iter()
            .find(|name| {
                Command::new(name)
                    .arg("--version")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            })
            .map(str::to_string)
    }

    /// Starts Chromium with a blank page; None (after saying why `test` is skipped) when
    /// there is none.
    pub fn launch(test: &str) -> Option<Browser> {
        let Some(executable) = Self::executable() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "no chromium under CI: .ci/run installs Debian's chromium"
            );
            eprintln!("SKIPPED {test}: no chromium (apt-get install chromium)");
            return None;
        };
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(executable)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--remote-debugging-port=0",
                "--window-size=1280,2600",
                // No name resolves: nothing but 127.0.0.1 is reachable.
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let url = stderr
            .lines()
            .map_while(Result::ok)
            .find_map(|line| {
                line.strip_prefix("DevTools listening on ")
                    .map(str::to_string)
            })
            .expect("chromium announces its DevTools endpoint");
        let (socket, _) = tungstenite::connect(url.trim()).expect("DevTools websocket");
        let mut browser = Browser {
            child,
            socket,
            session: String::new(),
            next_id: 0,
            errors: Vec::new(),
            requests: Vec::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}), false);
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
            false,
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        browser.call("Runtime.enable", json!({}), true);
        browser.call("Log.enable", json!({}), true);
        browser.call("Page.enable", json!({}), true);
        browser.call("Network.enable", json!({}), true);
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 2600, "deviceScaleFactor": 1, "mobile": false}),
            true,
        );
        Some(browser)
    }

    /// Sends a command (to the page when `on_page`) and returns its result, noting the
    /// console errors, exceptions and requests that arrive meanwhile.
    pub fn call(&mut self, method: &str, params: Value, on_page: bool) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if on_page {
            message["sessionId"] = json!(self.session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .expect("send to DevTools");
        loop {
            let Message::Text(text) = self.socket.read().expect("read from DevTools") else {
                continue;
            };
            let message: Value = serde_json::from_str(&text).unwrap();
            if message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
            self.note(&message);
        }
    }

    fn note(&mut self, event: &Value) {
        let params = &event["params"];
        match event["method"].as_str() {
            Some("Runtime.exceptionThrown") => self.errors.push(format!(
                "exception: {}",
                params["exceptionDetails"]["exception"]["description"]
            )),
            Some("Runtime.consoleAPICalled") if params["type"] == "error" => self
                .errors
                .push(format!("console.error: {}", params["args"])),
            Some("Log.entryAdded") if params["entry"]["level"] == "error" => self
                .errors
                .push(format!("log: {}", params["entry"]["text"])),
            Some("Network.requestWillBeSent") => self.requests.push(params["request"].clone()),
            _ => {}
        }
    }

    /// The value of a JavaScript expression in the page (promises awaited).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            true,
        );
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Polls `expression` until it is true (a throw, as while a page loads, counts as
    /// false); false after `within`.
    pub fn wait_for(&mut self, expression: &str, within: Duration) -> bool {
        let guarded = format!(
            "(() => {{ try {{ return !!({expression}); }} catch (e) {{ return false; }} }})()"
        );
        let start = Instant::now();
        while start.elapsed() < within {
            if self.eval(&guarded) == json!(true) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Opens `url` and waits until `drawn` is true of the page (the dashboard's session
    /// page marks the version it drew; the list, its rows), within 30 s.
    pub fn open(&mut self, url: &str, drawn: &str) {
        self.errors.clear();
        self.requests.clear();
        self.call("Page.navigate", json!({"url": url}), true);
        if !self.wait_for(drawn, Duration::from_secs(30)) {
            let page = self.eval("document.body.innerText.slice(0, 500)");
            panic!(
                "{url} did not draw ({drawn}); errors: {:?}; page: {page}",
                self.errors
            );
        }
    }

    /// Moves the mouse to the middle of the first chart's plot area; returns the tooltip.
    pub fn hover_first_chart(&mut self) -> String {
        let point = self.eval(
            "(() => { const r = document.querySelector('[data-chart] .overlay').getBoundingClientRect(); \
             window.scrollTo(0, 0); return [r.left + r.width * 0.6, r.top + r.height / 2]; })()",
        );
        let (x, y) = (point[0].as_f64().unwrap(), point[1].as_f64().unwrap());
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": x, "y": y}),
            true,
        );
        self.eval(
            "document.getElementById('tooltip').hidden ? '' : document.getElementById('tooltip').textContent",
        )
        .as_str()
        .unwrap()
        .to_string()
    }

    /// Sets the page's viewport to `width` × `height` CSS pixels.
    pub fn viewport(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
            true,
        );
    }

    /// Shows pages as in a system set to dark mode (`prefers-color-scheme: dark`), or light.
    pub fn dark_mode(&mut self, dark: bool) {
        let scheme = if dark { "dark" } else { "light" };
        self.call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
            true,
        );
    }

    /// Lets the page download files into `dir` (as a person's browser would, to their
    /// downloads folder).
    pub fn download_to(&mut self, dir: &std::path::Path) {
        self.call(
            "Browser.setDownloadBehavior",
            json!({"behavior": "allow", "downloadPath": dir.display().to_string()}),
            false,
        );
    }

    /// Clicks the element `selector` and returns the text of the file `name` it
    /// downloads into `dir` (within 10 s).
    pub fn download(&mut self, selector: &str, dir: &std::path::Path, name: &str) -> String {
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        self.eval(&format!("document.querySelector('{selector}').click()"));
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(text) = std::fs::read_to_string(&path) {
                return text;
            }
            // The download's events arrive while the browser is spoken to.
            self.eval("1");
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "{selector} downloaded no {name} within 10 s; errors: {:?}; in {dir:?}: {:?}",
            self.errors,
            std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
        );
    }

    /// Takes a screenshot of the page as it is laid out (its whole height when `full`).
    pub fn screenshot_page(&mut self, path: &str, full: bool) {
        self.eval("window.scrollTo(0, 0)");
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": full}),
            true,
        );
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// Takes a screenshot of `height` pixels of the page from the top of the element
    /// `selector` (its full width), wherever it is.
    pub fn screenshot_from(&mut self, path: &str, selector: &str, height: u32) {
        let top = self.eval(&format!(
            "document.querySelector('{selector}').getBoundingClientRect().top + window.scrollY - 8"
        ));
        let width = self.eval("document.documentElement.clientWidth");
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": top, "width": width, "height": height, "scale": 1}}),
            true,
        );
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    pub fn screenshot(&mut self, path: &str) {
        self.screenshot_page(path, false);
    }

    /// Signs in as a person does where keys are required: the sign-in page at `root`
    /// (the server's `/`), then `key` kept in this browser for the pages opened next.
    pub fn sign_in(&mut self, root: &str, key: &str) {
        self.open(root, "document.querySelector('#api-key')");
        self.eval(&format!("localStorage.setItem(KEY_STORAGE, '{key}')"));
    }

    /// Saves a screenshot of the page's first `height` pixels as `name` in
    /// `TVBO_SCREENSHOTS`, when it is set (the pictures docs/dashboard.md shows).
    pub fn keep_screenshot(&mut self, name: &str, height: u32) {
        if let Ok(dir) = std::env::var("TVBO_SCREENSHOTS") {
            let width = self.eval("window.innerWidth").as_u64().unwrap() as u32;
            let full = self.eval("window.innerHeight").as_u64().unwrap() as u32;
            self.viewport(width, height);
            std::thread::sleep(Duration::from_millis(300));
            self.screenshot_page(&format!("{dir}/{name}"), false);
            self.viewport(width, full);
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
