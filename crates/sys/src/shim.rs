//! Loading a C shim with `dlopen`: where it is, loading it once, checking its
//! interface version.
//!
//! Much of libfabric's and PMIx's API is `static inline` or macro-heavy, so ninefold
//! calls each through a small C shim that `build.rs` compiles into a shared object.
//! Loading it at run time (instead of linking) lets every crate build and run on a
//! machine without the library; only the feature that needs it says it is missing.
//!
//! Rules the callers rely on:
//! 1. A loaded shim is never unloaded: callers keep the [`Shim`] in a `static`
//!    (`OnceLock`), so function pointers taken from it stay valid for the process.
//! 2. Every shim exports `int <prefix>_abi(void)` returning its interface version;
//!    [`Shim::load`] refuses a shim whose number differs from the caller's, so a
//!    stale shim is never called with the wrong signatures.

use std::ffi::c_int;

/// What a crate knows about its shim (mostly from its `build.rs`).
#[derive(Debug, Clone, Copy)]
pub struct ShimSpec {
    /// The library's name in messages, e.g. `"libfabric"`.
    pub library: &'static str,
    /// The environment variable that overrides the path at run time.
    pub env: &'static str,
    /// The path `build.rs` built the shim at, if it could build it.
    pub built: Option<&'static str>,
    /// Why `build.rs` could not build it (when `built` is `None`).
    pub unavailable: Option<&'static str>,
    /// What to install when the shim is missing or does not load.
    pub install_hint: &'static str,
    /// The exported version function, NUL-terminated (e.g. `b"nf_ofi_abi\0"`).
    pub abi_symbol: &'static [u8],
    /// The interface version this build expects.
    pub abi: c_int,
}

/// A loaded, version-checked shim.
#[derive(Debug)]
pub struct Shim {
    lib: libloading::Library,
    path: String,
}

impl ShimSpec {
    /// Where the shim is: the run-time override, else the path baked in by `build.rs`.
    pub fn path(&self) -> Result<String, String> {
        if let Ok(p) = std::env::var(self.env) {
            return Ok(p);
        }
        match self.built {
            Some(p) => Ok(p.to_owned()),
            None => Err(self.unavailable.map_or_else(
                || {
                    format!(
                        "built without the {} development files; {}",
                        self.library, self.install_hint
                    )
                },
                str::to_owned,
            )),
        }
    }
}

impl Shim {
    /// Loads the shim `spec` names and checks its interface version (rule 2).
    pub fn load(spec: &ShimSpec) -> Result<Shim, String> {
        let path = spec.path()?;
        // SAFETY: loading runs the shim's and its library's initialisers, which have no
        // preconditions; the caller keeps the library for the life of the process
        // (rule 1).
        let lib = unsafe { libloading::Library::new(&path) }.map_err(|e| {
            format!(
                "cannot load the {} shim {path}: {e} (is {} installed, and was the shim \
                 built on this machine? {})",
                spec.library, spec.library, spec.install_hint
            )
        })?;
        let shim = Shim { lib, path };
        // SAFETY: every shim exports `int <prefix>_abi(void)` (rule 2).
        let abi_fn: unsafe extern "C" fn() -> c_int = unsafe { shim.symbol(spec.abi_symbol) }?;
        // SAFETY: the version function takes nothing and returns a constant.
        let abi = unsafe { abi_fn() };
        if abi != spec.abi {
            return Err(format!(
                "{} shim {} has interface version {abi}, this build expects {}; rebuild ninefold",
                spec.library, shim.path, spec.abi
            ));
        }
        Ok(shim)
    }

    /// The exported function `name` (NUL-terminated), copied out as a `T`.
    ///
    /// # Safety
    /// `T` must be the function-pointer type of the symbol's C signature, and the
    /// pointer must not be used after this `Shim` is dropped (rule 1 keeps it forever).
    pub unsafe fn symbol<T: Copy>(&self, name: &[u8]) -> Result<T, String> {
        // SAFETY: the caller promises `T` matches the symbol (this function's contract).
        unsafe { self.lib.get::<T>(name) }.map(|s| *s).map_err(|e| {
            format!(
                "shim {} lacks {}: {e}",
                self.path,
                String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name))
            )
        })
    }

    /// The path the shim was loaded from.
    pub fn path(&self) -> &str {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: ShimSpec = ShimSpec {
        library: "libnothing",
        env: "NF_SYS_TEST_SHIM_UNSET",
        built: None,
        unavailable: None,
        install_hint: "install libnothing-dev",
        abi_symbol: b"nf_nothing_abi\0",
        abi: 1,
    };

    #[test]
    fn a_shim_never_built_says_what_to_install() {
        let e = Shim::load(&SPEC).unwrap_err();
        assert!(
            e.contains("libnothing") && e.contains("install libnothing-dev"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_file_is_named_in_the_error() {
        let spec = ShimSpec {
            built: Some("/nonexistent/libnf_nothing.so"),
            ..SPEC
        };
        let e = Shim::load(&spec).unwrap_err();
        assert!(e.contains("/nonexistent/libnf_nothing.so"), "{e}");
    }

    #[test]
    fn a_library_without_the_version_function_is_refused() {
        // libc is loaded in every process and exports no nf_nothing_abi.
        let spec = ShimSpec {
            built: Some("libc.so.6"),
            ..SPEC
        };
        let e = Shim::load(&spec).unwrap_err();
        assert!(e.contains("lacks nf_nothing_abi"), "{e}");
    }
}
