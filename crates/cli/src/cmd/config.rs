//! `nf config`: every setting, the value in force here and where it came from, and
//! which values the layers that read them would refuse.

use clap::Args;
use nf_core::settings::{self, Resolved, Source};

use super::run::settings_problem;

/// Arguments of `nf config`.
#[derive(Args)]
pub struct ConfigArgs {
    /// Print the settings as the README's Markdown table (meaning and default).
    #[arg(long)]
    pub markdown: bool,
}

/// Runs `nf config`.
pub fn main(a: ConfigArgs) -> anyhow::Result<i32> {
    if a.markdown {
        print!("{}", settings::markdown());
        return Ok(0);
    }
    let rows = settings::resolve_here();
    let problems = invalid(&rows);
    let width = rows.iter().map(|r| r.setting.name.len()).max().unwrap_or(0);
    println!("# {:<width$} {:<6} source: value", "variable", "layer");
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
            "{:<w$} {:<6} {}: {value}{mark}",
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

/// The value a setting left unset takes here, where this process can know it; the
/// default's description where it depends on the job (peers, hosts, the command).
fn default_in_force(r: &Resolved) -> String {
    match r.setting.name {
        "NF_TUNE_FILE" => nf_core::tune::cache_path().map_or_else(
            || String::from("none (neither XDG_CACHE_HOME nor HOME is set): nothing is cached"),
            |p| p.display().to_string(),
        ),
        "NF_MEM_REGISTRY" => nf_memreg::default_dir().display().to_string(),
        "NF_ADDR" => match nf_node::addr::default_address() {
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
