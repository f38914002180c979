//! Records the commit the bench was built from, for machines where it runs without git (the GPU
//! machine gets a copy of the tree without `.git`).

use std::process::Command;

fn main() {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    println!("cargo:rustc-env=SPMV_BUILD_COMMIT={commit}{}", if dirty { "-dirty" } else { "" });
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        // HEAD names the branch and does not change with a commit; its log gains a line with each.
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/logs/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
    }
}
