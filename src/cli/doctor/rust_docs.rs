//! The Rust docs rustup installs (the `rust-docs` component): the HTML under
//! `rustc --print sysroot`/share/doc/rust/html that `drydock index --toolchain-docs` reads.

use std::path::Path;

use crate::docs::rust_toolchain_root;

use super::{Found, output_line};

const FIX: &str = "rustup component add rust-docs";

pub(super) async fn found() -> Found {
    let sysroot = match output_line("rustc", &["--print", "sysroot"], "").await {
        Ok((line, _)) => line,
        Err(why) => {
            return Found::Missing {
                detail: why.to_string(),
                fix: format!("install Rust with rustup (https://rustup.rs), then: {FIX}"),
            };
        }
    };
    let version = output_line("rustc", &["--version"], "rustc")
        .await
        .map(|(line, _)| line)
        .unwrap_or_default();
    let html = Path::new(&sysroot).join("share/doc/rust/html");
    // The same place the docs index looks, so this says what `--toolchain-docs` will find.
    let Some(root) = rust_toolchain_root(Path::new(&sysroot), &version) else {
        return Found::Missing {
            detail: format!("{}: not there", html.display()),
            fix: FIX.into(),
        };
    };
    match root.dir.join("std/index.html").is_file() {
        true => Found::Ok {
            detail: format!("{} ({version})", root.dir.display()),
        },
        false => Found::Missing {
            detail: format!("{}: no std/index.html", root.dir.display()),
            fix: FIX.into(),
        },
    }
}
