//! Driving a running server over its HTTP API (`tvbo bench --server URL`), so that the
//! whole service is measured: parsing, the store's transactions, the model rebuilt from
//! the database on every call. Each bench thread owns a single-threaded runtime and
//! blocks on it; nothing here runs inside another async runtime.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tvbo_core::domain::space::{ParameterSpec, Params, SearchSpace};

use super::error::BenchError;
use super::options::ServerTime;
use super::runner::{ComputeClock, Driver, Handed};

/// An HTTP client for one bench thread.
pub struct Client {
    base: String,
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl Client {
    /// A client of the server at `base` (e.g. `http://127.0.0.1:8080`), sending `api_key`
    /// as its bearer when given. Plain HTTP only: the bench is built without a TLS stack.
    pub fn new(base: &str, api_key: Option<&str>) -> Result<Client, BenchError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| BenchError::Http(format!("runtime: {e}")))?;
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(key) = api_key {
            let mut bearer = reqwest::header::HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| BenchError::Http("the API key is not a valid header value".into()))?;
            bearer.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, bearer);
        }
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .build()
            .map_err(|e| BenchError::Http(format!("client: {e}")))?;
        Ok(Client {
            base: base.trim_end_matches('/').to_string(),
            http,
            runtime,
        })
    }

    /// Sends `body` (or nothing) to `path` and returns the JSON answer; any non-2xx
    /// answer is an error carrying the server's problem document.
    fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, BenchError> {
        let url = format!("{}{path}", self.base);
        self.runtime.block_on(async {
            let mut request = self.http.request(method.clone(), &url);
            if let Some(body) = body {
                request = request.json(body);
            }
            let response = request
                .send()
                .await
                .map_err(|e| BenchError::Http(format!("{method} {url}: {e}")))?;
            let status = response.status();
            let text = response
                .text()
                .await
                .map_err(|e| BenchError::Http(format!("{method} {url}: {e}")))?;
            if !status.is_success() {
                return Err(BenchError::Http(format!(
                    "{method} {url}: {status}: {text}"
                )));
            }
            serde_json::from_str(&text)
                .map_err(|e| BenchError::Http(format!("{method} {url}: invalid JSON: {e}")))
        })
    }
}

/// One session on the server.
pub struct HttpDriver<'a> {
    client: &'a Client,
    session: String,
    /// The session's search space: suggestions are mapped back onto the unit cube the
    /// objectives take.
    space: SearchSpace,
    time: ServerTime,
    /// When the outstanding suggestion was handed out (wall-clock sessions).
    handed_at: DateTime<Utc>,
}

impl<'a> HttpDriver<'a> {
    /// Creates the session of `request` (a `POST /v1/sessions` body).
    pub fn create(
        client: &'a Client,
        request: &Value,
        time: ServerTime,
    ) -> Result<Self, BenchError> {
        let session = client.call(reqwest::Method::POST, "/v1/sessions", Some(request))?;
        let id = session["id"]
            .as_str()
            .ok_or_else(|| BenchError::Http("created session without an id".into()))?
            .to_string();
        let parameters: Vec<ParameterSpec> = serde_json::from_value(request["parameters"].clone())
            .map_err(|e| BenchError::Config(format!("parameters: {e}")))?;
        let space = SearchSpace::new(parameters).map_err(|e| BenchError::Config(e.to_string()))?;
        Ok(HttpDriver {
            client,
            session: id,
            space,
            time,
            handed_at: Utc::now(),
        })
    }

    /// The session's id on the server.
    pub fn session_id(&self) -> &str {
        &self.session
    }
}

impl Driver for HttpDriver<'_> {
    fn compute_clock(&self) -> ComputeClock {
        ComputeClock::Wall
    }

    fn suggest(&mut self, t: f64) -> Result<Handed, BenchError> {
        let body = match self.time {
            ServerTime::Client => json!({"t": t}),
            ServerTime::Wall => json!({}),
        };
        let path = format!("/v1/sessions/{}/suggestions", self.session);
        let answer = self
            .client
            .call(reqwest::Method::POST, &path, Some(&body))?;
        self.handed_at = Utc::now();
        let suggestion = &answer["suggestions"][0];
        let id = suggestion["id"]
            .as_str()
            .ok_or_else(|| BenchError::Http(format!("suggestion without an id: {answer}")))?;
        let params: Params = serde_json::from_value(suggestion["params"].clone())
            .map_err(|e| BenchError::Http(format!("suggestion's params: {e}: {answer}")))?;
        let x = self
            .space
            .to_unit(&params, "params")
            .map_err(|e| BenchError::Http(format!("{e}: {answer}")))?;
        Ok(Handed {
            x,
            id: Some(id.to_string()),
        })
    }

    fn observe(
        &mut self,
        handed: &Handed,
        t: f64,
        value: f64,
        regret: f64,
    ) -> Result<(), BenchError> {
        let mut body = json!({
            "suggestion_id": handed.id,
            "value": value,
            "regret": regret,
        });
        match self.time {
            ServerTime::Client => body["t"] = json!(t),
            ServerTime::Wall => body["measured_at"] = json!(self.handed_at.to_rfc3339()),
        }
        let path = format!("/v1/sessions/{}/observations", self.session);
        self.client
            .call(reqwest::Method::POST, &path, Some(&body))?;
        Ok(())
    }

    fn dataset_size(&mut self) -> Result<usize, BenchError> {
        let path = format!("/v1/sessions/{}", self.session);
        let session = self.client.call(reqwest::Method::GET, &path, None)?;
        session["dataset_size"]
            .as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| BenchError::Http(format!("session without dataset_size: {session}")))
    }
}
