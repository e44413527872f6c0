//! `nf config`: every setting, its value here and where it came from.

use clap::Args;
use nf_core::settings;

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
    let width = rows.iter().map(|r| r.setting.name.len()).max().unwrap_or(0);
    println!("# {:<width$} {:<6} source: value", "variable", "layer");
    for r in rows {
        println!(
            "{:<w$} {:<6} {}: {}",
            r.setting.name,
            r.setting.layer,
            r.source,
            r.value,
            w = width + 2
        );
    }
    Ok(0)
}
