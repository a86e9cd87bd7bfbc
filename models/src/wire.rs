//! What makes a provider: its [`WireFormat`] (where requests go, its headers, the request body,
//! the state machine of a streamed answer, the meaning of its error bodies). [`HttpModel`] is the
//! one [`Model`] built on any of them.

use crate::{
    ApiKey, Settings,
    http::{Endpoint, StreamState},
};
use async_trait::async_trait;
use baton_core::model::{Delta, Error, Model, ModelRequest, ModelTurn};
use reqwest::{StatusCode, header::HeaderMap};
use serde_json::Value;
use std::marker::PhantomData;
use tokio::sync::mpsc;

/// One provider's wire format.
pub trait WireFormat: Send + Sync + 'static {
    /// The state of one streamed answer.
    type Stream: StreamState + Default + Send;
    /// The hosted API's base URL, used when the configuration names none.
    const DEFAULT_BASE_URL: &'static str;
    /// What follows the base URL in the request's URL.
    const PATH: &'static str;

    /// The provider's own headers: its authentication, its version.
    fn headers(api_key: Option<&ApiKey>) -> Result<HeaderMap, Error>;

    /// The JSON body of a streamed request.
    fn request_body(settings: &Settings, request: ModelRequest<'_>) -> Result<Value, Error>;

    /// The typed error an error status and its body mean.
    fn classify(status: StatusCode, body: &[u8]) -> Error;
}

/// A model behind an HTTP API that speaks wire format `W`.
#[derive(Debug)]
pub struct HttpModel<W> {
    settings: Settings,
    endpoint: Endpoint,
    format: PhantomData<fn() -> W>,
}

impl<W: WireFormat> HttpModel<W> {
    pub fn new(settings: Settings) -> Result<Self, Error> {
        let base_url = settings.base_url.as_deref().unwrap_or(W::DEFAULT_BASE_URL);
        let url = format!("{}{}", base_url.trim_end_matches('/'), W::PATH);
        let headers = W::headers(settings.api_key.as_ref())?;
        let endpoint = crate::endpoint(&settings, url, headers)?;
        Ok(Self {
            settings,
            endpoint,
            format: PhantomData,
        })
    }

    /// The JSON body of a streamed request for `request`.
    pub fn request_body(&self, request: ModelRequest<'_>) -> Result<Value, Error> {
        W::request_body(&self.settings, request)
    }
}

#[async_trait]
impl<W: WireFormat> Model for HttpModel<W> {
    fn name(&self) -> &str {
        &self.settings.model
    }

    async fn generate(
        &self,
        request: ModelRequest<'_>,
        deltas: mpsc::UnboundedSender<Delta>,
    ) -> Result<ModelTurn, Error> {
        let body = self.request_body(request)?;
        self.endpoint
            .stream(&body, W::Stream::default(), &deltas, W::classify)
            .await
    }
}
