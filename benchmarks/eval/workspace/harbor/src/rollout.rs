//! Progressive rollouts: shift traffic in steps, watch the error rate, abort early.

use std::time::Duration;

use crate::backend::Backend;
use crate::metrics::{HealthReport, MetricsSource};
use thiserror::Error;

pub const CANARY_STEPS: [u8; 4] = [5, 25, 50, 100];

#[derive(Debug, Error)]
pub enum RolloutError {
    #[error("canary unhealthy at {step}%: {reason}")]
    Unhealthy { step: u8, reason: String },
    #[error("backend error: {0}")]
    Backend(#[from] crate::backend::BackendError),
}

pub struct Rollout<'a, B: Backend, M: MetricsSource> {
    backend: &'a B,
    metrics: &'a M,
    app: String,
    step_index: usize,
    /// Time to let error rates show up before the next step.
    pub step_pause: Duration,
    /// 5xx ratio above which the rollout is aborted (0.01 = 1%).
    pub max_error_rate: f64,
}

impl<'a, B: Backend, M: MetricsSource> Rollout<'a, B, M> {
    pub fn new(backend: &'a B, metrics: &'a M, app: &str) -> Self {
        Self {
            backend,
            metrics,
            app: app.to_owned(),
            step_index: 0,
            step_pause: Duration::from_secs(120),
            max_error_rate: 0.01,
        }
    }

    /// Move to the next traffic step, then wait and judge its health.
    /// On an unhealthy canary, traffic goes back to 0% before the error returns.
    pub async fn advance(&mut self) -> Result<u8, RolloutError> {
        let step = CANARY_STEPS[self.step_index];
        self.backend.set_traffic(&self.app, step).await?;
        tokio::time::sleep(self.step_pause).await;
        let report: HealthReport = self.metrics.health(&self.app).await;
        if report.error_rate > self.max_error_rate || report.p99_growth > 0.30 {
            self.backend.set_traffic(&self.app, 0).await?;
            return Err(RolloutError::Unhealthy {
                step,
                reason: report.describe(),
            });
        }
        self.step_index += 1;
        Ok(step)
    }
}
