//! Running the server: open the store, serve the router, shut down gracefully.

use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::api::{self, RouterSettings};
use crate::store::{PoolSettings, PostgresStore, SqliteStore, Store};

/// Opens the store named by a database URL: `sqlite:` URLs open SQLite, `postgres://` and
/// `postgresql://` URLs open PostgreSQL; any other scheme is an error.
pub async fn open_store(database_url: &str, pool: &PoolSettings) -> anyhow::Result<Arc<dyn Store>> {
    if database_url.starts_with("sqlite:") {
        let store = SqliteStore::connect(database_url, pool)
            .await
            .with_context(|| format!("opening {database_url}"))?;
        Ok(Arc::new(store))
    } else if database_url.starts_with("postgres://") || database_url.starts_with("postgresql://") {
        // Not the URL: it may carry a password.
        let store = PostgresStore::connect(database_url, pool)
            .await
            .context("opening the PostgreSQL database")?;
        Ok(Arc::new(store))
    } else {
        anyhow::bail!(
            "unsupported DATABASE_URL {:?}: expected sqlite://path, \
             sqlite::memory: or postgres://user@host/database",
            redacted_database_url(database_url)
        )
    }
}

/// The database URL with its password replaced by `***`, for logs and error messages.
pub fn redacted_database_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let authority_end = url[scheme_end..]
        .find('/')
        .map_or(url.len(), |i| scheme_end + i);
    let Some(at) = url[scheme_end..authority_end]
        .rfind('@')
        .map(|i| scheme_end + i)
    else {
        return url.to_string();
    };
    match url[scheme_end..at].find(':') {
        Some(colon) => format!("{}***{}", &url[..scheme_end + colon + 1], &url[at..]),
        None => url.to_string(),
    }
}

/// Serves the API on `listener` until `shutdown` completes, then drains requests in flight.
pub async fn serve(
    listener: TcpListener,
    store: Arc<dyn Store>,
    settings: RouterSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    axum::serve(listener, api::router(store, settings))
        .with_graceful_shutdown(shutdown)
        .await
        .context("serving HTTP")
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}

#[cfg(test)]
mod tests {
    use super::redacted_database_url;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redacted_database_url("postgres://tvbo:s3cr@t@db:5432/tvbo"),
            "postgres://tvbo:***@db:5432/tvbo"
        );
        assert_eq!(
            redacted_database_url("postgres://postgres@127.0.0.1/test"),
            "postgres://postgres@127.0.0.1/test"
        );
        assert_eq!(
            redacted_database_url("sqlite://tvbo.db"),
            "sqlite://tvbo.db"
        );
    }
}
