//! The exporter: the SDK's batch processor, sending OTLP/HTTP protobuf through a reqwest
//! client on drydock's runtime, and saying once that the collector does not answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use tokio::runtime::Handle;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::registry::LookupSpan;

use super::task_trace::TaskIds;
use crate::config::TelemetryConfig;

/// How long one export may take before it is dropped.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the spans gathered are sent.
const EVERY: Duration = Duration::from_secs(2);
/// How long drydock's exit waits to send the spans still gathered.
const AT_EXIT_WITHIN: Duration = Duration::from_secs(3);

/// Why traces are not exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("the traces' HTTP client: {0}")]
    Client(#[source] model_fetch::Error),
    #[error("telemetry.otlp_endpoint {url}: {source}")]
    Exporter {
        url: String,
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// Traces being exported; dropping it sends what is still gathered.
pub struct Exporting {
    provider: SdkTracerProvider,
}

impl Exporting {
    /// Starts exporting to `config`'s collector, through `runtime`; `None` when traces are
    /// off.
    pub fn start(
        config: &TelemetryConfig,
        runtime: Handle,
    ) -> Result<Option<Exporting>, ExportError> {
        let Some(url) = &config.traces_url else {
            return Ok(None);
        };
        let client = Collector {
            client: model_fetch::Client::builder()
                .timeout(EXPORT_TIMEOUT)
                .build()
                .map_err(ExportError::Client)?,
            runtime,
            url: url.to_string(),
            unanswered: Arc::default(),
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(url.as_str())
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|source| ExportError::Exporter {
                url: url.to_string(),
                source,
            })?;
        let batches = BatchSpanProcessor::builder(exporter)
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_scheduled_delay(EVERY)
                    .build(),
            )
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(batches)
            .with_id_generator(TaskIds::default())
            .with_resource(
                Resource::builder()
                    .with_service_name("drydock")
                    .with_attribute(opentelemetry::KeyValue::new(
                        "service.version",
                        env!("CARGO_PKG_VERSION"),
                    ))
                    .build(),
            )
            .build();
        opentelemetry::global::set_tracer_provider(provider.clone());
        super::ON.store(true, Ordering::Relaxed);
        Ok(Some(Exporting { provider }))
    }

    /// The layer that turns drydock's [`super::TARGET`] spans into exported spans.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("drydock"))
            .with_location(false)
            .with_threads(false)
            .with_filter(filter_fn(|meta| {
                meta.is_span() && meta.target() == super::TARGET
            }))
    }
}

impl Drop for Exporting {
    fn drop(&mut self) {
        super::ON.store(false, Ordering::Relaxed);
        if let Err(error) = self.provider.shutdown_with_timeout(AT_EXIT_WITHIN) {
            tracing::warn!("the last traces were not sent: {error}");
        }
    }
}

/// The collector, reached on drydock's runtime (the batch processor exports from a thread
/// of its own). A collector that does not answer is said once, and again only after it
/// answered in between.
#[derive(Debug)]
struct Collector {
    client: model_fetch::Client,
    runtime: Handle,
    url: String,
    unanswered: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl HttpClient for Collector {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let (parts, body) = request.into_parts();
            let mut outgoing = client.post(parts.uri.to_string()).body(body);
            for (name, value) in &parts.headers {
                outgoing = outgoing.header(name.as_str(), value.as_bytes());
            }
            let response = outgoing.send().await?;
            let status = response.status().as_u16();
            let body = response.bytes().await?;
            Ok::<_, model_fetch::Error>((status, body))
        });
        let answer = match sent.await {
            Ok(Ok((status, body))) if (200..300).contains(&status) => Ok((status, body)),
            Ok(Ok((status, body))) => Err(format!(
                "it answered {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            )),
            Ok(Err(error)) => Err(error.to_string()),
            Err(error) => Err(format!("the export was stopped: {error}")),
        };
        match answer {
            Ok((status, body)) => {
                if self.unanswered.swap(false, Ordering::Relaxed) {
                    tracing::info!("traces reach {} again", self.url);
                }
                Ok(Response::builder().status(status).body(body)?)
            }
            Err(why) => {
                if !self.unanswered.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "traces are dropped: the collector at {} does not take them ({why}); \
                         drydock goes on, and says so again only after it answered",
                        self.url
                    );
                }
                Err(why.into())
            }
        }
    }
}
