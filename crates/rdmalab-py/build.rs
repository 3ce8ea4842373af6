//! Bakes the commit the engine is built from into the binary (`_core.build_commit()`), so an
//! installed wheel can say where it came from; "unknown" where no git checkout is at hand.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("git").args(args).current_dir(dir).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=7", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=RDMALAB_BUILD_COMMIT={commit}");
    // Build again when HEAD moves: the file HEAD and the branch it names.
    for path in [Some("HEAD".to_string()), git(&["symbolic-ref", "-q", "HEAD"])].into_iter().flatten() {
        if let Some(p) = git(&["rev-parse", "--git-path", &path]) {
            let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
