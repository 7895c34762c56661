//! `[telemetry]`: where drydock sends its traces.

use serde::Deserialize;

use super::ConfigError;

/// drydock's own traces (`[telemetry]` in the file): off unless an OTLP endpoint is named.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// Where the traces go: the OTLP/HTTP URL of a collector's traces (`…/v1/traces`).
    pub traces_url: Option<url::Url>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTelemetry {
    otlp_endpoint: Option<String>,
}

/// The traces' URL of `otlp_endpoint`: a collector's base URL (`http://host:4318`, as
/// `OTEL_EXPORTER_OTLP_ENDPOINT` names it) gets `/v1/traces`; a URL that already ends so is
/// kept.
pub(super) fn resolve(file: FileTelemetry) -> Result<TelemetryConfig, ConfigError> {
    let Some(endpoint) = file.otlp_endpoint else {
        return Ok(TelemetryConfig::default());
    };
    let invalid = |why: String| ConfigError::Invalid(format!("telemetry.otlp_endpoint: {why}"));
    let mut url = url::Url::parse(endpoint.trim())
        .map_err(|e| invalid(format!("`{endpoint}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(invalid(format!(
            "`{endpoint}` is not an http:// or https:// URL of a collector (OTLP over HTTP, \
             as http://127.0.0.1:4318)"
        )));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(format!("`{endpoint}` has a query or a fragment")));
    }
    if !url.path().ends_with("/v1/traces") {
        let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    Ok(TelemetryConfig {
        traces_url: Some(url),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traces_url(endpoint: &str) -> Result<String, String> {
        let file = FileTelemetry {
            otlp_endpoint: Some(endpoint.into()),
        };
        resolve(file)
            .map(|c| c.traces_url.unwrap().to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_collectors_base_url_gets_the_traces_path_once() {
        let cases = [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            ("http://collector:4318/", "http://collector:4318/v1/traces"),
            (
                "https://otel.example/in/",
                "https://otel.example/in/v1/traces",
            ),
            ("http://c:4318/v1/traces", "http://c:4318/v1/traces"),
        ];
        for (endpoint, url) in cases {
            assert_eq!(traces_url(endpoint).as_deref(), Ok(url), "{endpoint}");
        }
        let off = resolve(FileTelemetry::default()).unwrap();
        assert_eq!(off.traces_url, None, "off by default");
    }

    #[test]
    fn an_endpoint_that_is_not_a_collectors_url_is_refused() {
        for endpoint in [
            "127.0.0.1:4318",
            "grpc://c:4317",
            "file:///tmp/x",
            "",
            "http://c/?a=1",
        ] {
            let error = traces_url(endpoint).unwrap_err();
            assert!(
                error.contains("telemetry.otlp_endpoint"),
                "{endpoint}: {error}"
            );
        }
    }
}
