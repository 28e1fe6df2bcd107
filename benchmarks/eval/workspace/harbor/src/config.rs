//! harbor.toml in the repository, merged over the user's config, overridden by HARBOR_* env.

use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
pub struct Config {
    pub default_env: Option<String>,
    pub context: Option<String>,
    pub vault_addr: Option<String>,
    #[serde(default)]
    pub apps: Vec<AppConfig>,
}

#[derive(Debug, Deserialize)]
pub struct AppConfig {
    pub name: String,
    pub backend: String,
    #[serde(default)]
    pub pre_deploy: Vec<String>,
}

pub fn user_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("harbor").join("config.toml"))
}

/// Later sources win: user file, then repo file, then environment variables.
pub fn load(repo_root: &Path) -> anyhow::Result<Config> {
    let mut figment = figment::Figment::new();
    if let Some(user) = user_config_path() {
        figment = figment.merge(figment::providers::Toml::file(user));
    }
    figment = figment
        .merge(figment::providers::Toml::file(repo_root.join("harbor.toml")))
        .merge(figment::providers::Env::prefixed("HARBOR_"));
    Ok(figment.extract()?)
}

/// Refuse an implicit production context: too many accidents with a stale kubeconfig.
pub fn check_context(active: &str, explicit: Option<&str>) -> anyhow::Result<()> {
    if active.contains("prod") && explicit.is_none() {
        anyhow::bail!("context {active} looks like production: pass --context explicitly");
    }
    Ok(())
}
