//! One `NF_*` environment setting as users see it: its name, the layer that reads it,
//! what it does and its value when unset.
//!
//! Each crate that reads settings declares them itself, as `pub const SETTINGS`
//! beside the code that parses them (libfabric's `fi_param_define`), so a meaning or
//! default is written where it can be checked against the code. `nf config` and the
//! README's settings table gather every crate's list; a test in the cli fails when a
//! source file names an `NF_` variable that no list declares. The type lives here, in
//! the lowest crate, so every layer can declare its own without depending upward.

/// One setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The environment variable.
    pub name: &'static str,
    /// Which layer reads it, as `nf config` shows it.
    pub layer: &'static str,
    /// What it does.
    pub meaning: &'static str,
    /// Its value when unset.
    pub default: &'static str,
}

impl Setting {
    /// A setting (in `const` lists).
    pub const fn new(
        name: &'static str,
        layer: &'static str,
        meaning: &'static str,
        default: &'static str,
    ) -> Setting {
        Setting {
            name,
            layer,
            meaning,
            default,
        }
    }
}
