//! `nf config`: every setting, the value in force here and where it came from, and
//! which values the layers that read them would refuse.

use clap::Args;
use nf_core::settings::{self, Resolved, Source};
use nf_sys::setting::Setting;

use super::run::settings_problem;

/// Every layer's settings, lowest layer first: each crate that reads `NF_*` variables
/// declares its own beside the code that parses them.
const LAYERS: &[&[Setting]] = &[
    nf_sys::SETTINGS,
    nf_transport::SETTINGS,
    nf_pmi::SETTINGS,
    nf_core::SETTINGS,
    nf_memreg::SETTINGS,
    nf_rma::SETTINGS,
    nf_link::SETTINGS,
    nf_bench::SETTINGS,
    super::run::SETTINGS,
];

/// Every setting of every layer, in layer order: what `nf config` shows and the
/// README's table lists (a test keeps each name to one layer).
pub fn all_settings() -> Vec<Setting> {
    LAYERS.iter().flat_map(|l| l.iter().copied()).collect()
}

/// Arguments of `nf config`.
#[derive(Args)]
pub struct ConfigArgs {
    /// Print the settings as the README's Markdown table (meaning and default).
    #[arg(long)]
    pub markdown: bool,
}

/// Runs `nf config`.
pub fn main(a: ConfigArgs) -> anyhow::Result<i32> {
    let all = all_settings();
    if a.markdown {
        print!("{}", markdown(&all));
        return Ok(0);
    }
    let rows = settings::resolve_here(&all);
    let problems = invalid(&rows);
    let width = rows.iter().map(|r| r.setting.name.len()).max().unwrap_or(0);
    let layer_width = rows
        .iter()
        .map(|r| r.setting.layer.len())
        .max()
        .unwrap_or(0);
    println!(
        "# {:<width$} {:<layer_width$} source: value",
        "variable", "layer"
    );
    for r in &rows {
        let value = match r.source {
            Source::Default => default_in_force(r),
            _ => r.value.clone(),
        };
        let mark = match problems.iter().find(|(name, _)| *name == r.setting.name) {
            Some((_, why)) => format!("   <- INVALID: {why}"),
            None => String::new(),
        };
        println!(
            "{:<w$} {:<layer_width$} {}: {value}{mark}",
            r.setting.name,
            r.setting.layer,
            r.source,
            w = width + 2
        );
    }
    for (_, why) in &problems {
        eprintln!("nf config: warning: {why}; jobs refuse to start until it is fixed or unset");
    }
    Ok(0)
}

/// `settings` as a Markdown table (the README's).
fn markdown(settings: &[Setting]) -> String {
    let mut out = String::from("| variable | layer | meaning | default |\n|---|---|---|---|\n");
    for s in settings {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            s.name,
            s.layer,
            s.meaning.replace('|', "\\|"),
            s.default
        ));
    }
    out
}

/// The value a setting left unset takes here, where this process can know it; the
/// default's description where it depends on the job (peers, hosts, the command).
fn default_in_force(r: &Resolved) -> String {
    match r.setting.name {
        "NF_TUNE_FILE" => nf_core::tune::cache_path().map_or_else(
            || String::from("none (neither XDG_CACHE_HOME nor HOME is set): nothing is cached"),
            |p| p.display().to_string(),
        ),
        "NF_MEM_REGISTRY" => nf_memreg::default_dir().display().to_string(),
        "NF_HOST" => nf_sys::host::host_identity(),
        "NF_ADDR" => match nf_link::addr::default_address() {
            Ok(a) => a.to_string(),
            Err(e) => e.to_string(),
        },
        // "what `nf tune` cached, else N": nothing was cached (else the source would
        // say so), so N.
        _ => match r.value.strip_prefix("what `nf tune` cached, else ") {
            Some(n) => n.to_owned(),
            None => r.value.clone(),
        },
    }
}

/// Settings set in the environment that their layer's own parser refuses, each with
/// the parser's message: the check `nf run` makes before a job ([`settings_problem`]),
/// given each setting alone, so every bad one is named and not only the first.
fn invalid(rows: &[Resolved]) -> Vec<(&'static str, String)> {
    rows.iter()
        .filter(|r| r.source == Source::Env)
        .filter_map(|r| {
            let alone = |n: &str| (n == r.setting.name).then(|| r.value.clone());
            settings_problem(&alone, None).map(|why| (r.setting.name, why))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Settings a standard names, which keep the standard's spelling.
    const STANDARD_NAMES: &[&str] = &["SHMEM_SYMMETRIC_SIZE"];

    #[test]
    fn each_name_is_listed_once_and_nf_prefixed() {
        let all = all_settings();
        for (i, s) in all.iter().enumerate() {
            assert!(
                s.name.starts_with("NF_") || STANDARD_NAMES.contains(&s.name),
                "{}",
                s.name
            );
            if let Some(twin) = all[i + 1..].iter().find(|t| t.name == s.name) {
                panic!(
                    "{} is listed twice, by layers {} and {}",
                    s.name, s.layer, twin.layer
                );
            }
        }
    }
}
