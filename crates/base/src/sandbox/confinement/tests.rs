//! Real sandboxes (bubblewrap, as the CI machine has it) asked to do what they must not.

use std::net::TcpListener;
use std::process::Command;

use super::*;
use crate::sandbox::support;

struct Place {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Place {
    fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in ["home/.ssh", "private-home", "work", "elsewhere", "tools"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("home/.ssh/id_ed25519"), "the person's key").unwrap();
        std::fs::write(root.join("home/.bashrc"), "# the person's\n").unwrap();
        std::fs::write(root.join("elsewhere/checkout.rs"), "fn main() {}\n").unwrap();
        std::fs::write(root.join("tools/tool"), "a toolchain file\n").unwrap();
        std::fs::write(root.join("work/settings"), "kept as it is\n").unwrap();
        Place { _dir: dir, root }
    }

    fn confinement(&self) -> Confinement {
        Confinement {
            work: self.root.join("work"),
            work_read_only: false,
            home: Some(Mount {
                source: self.root.join("private-home"),
                target: self.root.join("home"),
            }),
            readable: vec![Mount::same(self.root.join("tools"))],
            writable: Vec::new(),
            protected: vec![Mount::same(self.root.join("work/settings"))],
            blanked: Vec::new(),
            passed: Vec::new(),
            env: vec![("CHOSEN".into(), "inside".into())],
            unset_env: vec!["SECRET_NAME".into()],
        }
    }
}

/// Runs `script` with sh in `confinement`: its exit code and its output.
fn inside(confinement: &Confinement, script: &str) -> (i32, String) {
    let bwrap = support::host().bwrap().expect("bubblewrap works here");
    let out = Command::new(bwrap)
        .args(confinement.args())
        .args(["--", "/bin/sh", "-c", script])
        .env("SECRET_NAME", "outside")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn the_work_is_writable_and_the_rest_of_the_host_is_not() {
    let place = Place::new();
    let sandbox = place.confinement();
    let root = place.root.display();

    let (code, out) = inside(&sandbox, "echo made > made.txt && cat made.txt && pwd");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("made\n{root}/work")), "{out}");
    assert_eq!(
        std::fs::read_to_string(place.root.join("work/made.txt")).unwrap(),
        "made\n"
    );

    for target in [
        format!("{root}/elsewhere/checkout.rs"),
        format!("{root}/tools/tool"),
        format!("{root}/work/settings"),
        "/usr/local/bin/planted".to_string(),
    ] {
        let (code, out) = inside(&sandbox, &format!("echo planted >> '{target}'"));
        assert_ne!(code, 0, "{target} was written from the sandbox: {out}");
    }
    assert_eq!(
        std::fs::read_to_string(place.root.join("elsewhere/checkout.rs")).unwrap(),
        "fn main() {}\n"
    );
    assert_eq!(
        std::fs::read_to_string(place.root.join("work/settings")).unwrap(),
        "kept as it is\n"
    );
    assert!(!Path::new("/usr/local/bin/planted").exists());
    // The sandbox's root is its own, read-only: no file appears there as if it were the
    // host's (a folder made to hold a mount point included).
    let (code, _) = inside(&sandbox, "echo planted > /etc/planted");
    assert_ne!(code, 0);
    let (code, _) = inside(&sandbox, "mkdir -p /home/planted");
    assert_ne!(code, 0);
    assert!(!Path::new("/etc/planted").exists());

    // ~/.bashrc inside is the private home's: the person's is not touched.
    let (code, out) = inside(&sandbox, &format!("echo planted >> '{root}/home/.bashrc'"));
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read_to_string(place.root.join("home/.bashrc")).unwrap(),
        "# the person's\n"
    );
    assert!(place.root.join("private-home/.bashrc").exists());
}

#[test]
fn the_persons_home_and_secrets_are_not_there() {
    let place = Place::new();
    let sandbox = place.confinement();
    let root = place.root.display();

    let (code, out) = inside(&sandbox, &format!("cat '{root}/home/.ssh/id_ed25519'"));
    assert_ne!(code, 0, "{out}");
    assert!(!out.contains("the person's key"), "{out}");
    let (code, out) = inside(&sandbox, &format!("ls -A '{root}/elsewhere'"));
    assert_ne!(code, 0, "another checkout is visible: {out}");
    let (code, out) = inside(&sandbox, "cat /etc/shadow; ls /root /home 2>&1; true");
    assert_eq!(code, 0);
    assert!(!out.contains("root:"), "{out}");

    let (_, out) = inside(
        &sandbox,
        "echo \"$HOME|$CHOSEN|${SECRET_NAME-unset}|$TMPDIR\"",
    );
    assert_eq!(out.trim(), format!("{root}/home|inside|unset|/tmp"));
    let (code, out) = inside(
        &sandbox,
        "cat \"$HOME/.bashrc\" 2>&1; echo x > \"$HOME/new\"",
    );
    assert_eq!(code, 0, "the private home is writable: {out}");
    assert!(place.root.join("private-home/new").exists());
    assert!(!place.root.join("home/new").exists());
    let (code, out) = inside(&sandbox, &format!("cat '{root}/tools/tool'"));
    assert_eq!((code, out.as_str()), (0, "a toolchain file\n"));
}

#[test]
fn no_process_and_no_network_of_the_host_are_reachable() {
    let place = Place::new();
    let sandbox = place.confinement();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();

    let (code, out) = inside(
        &sandbox,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
    );
    // sh may lack /dev/tcp: bash is asked too, where it has it.
    assert!(!out.contains("connected"), "{code} {out}");
    let (_, out) = inside(
        &sandbox,
        &format!(
            "command -v bash >/dev/null && bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected' 2>&1"
        ),
    );
    assert!(!out.contains("connected"), "{out}");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "the host's port was reached");

    let (code, out) = inside(&sandbox, "ls /proc | grep -c '^[0-9]'");
    assert_eq!(code, 0, "{out}");
    let processes: u32 = out.trim().parse().unwrap();
    assert!(processes <= 4, "the host's processes are visible: {out}");
    let drydock = std::process::id();
    let (code, _) = inside(&sandbox, &format!("test -e /proc/{drydock}/root/etc"));
    assert_ne!(code, 0, "drydock's process is visible from the sandbox");
}

#[test]
fn the_arguments_name_every_mount_in_order() {
    let place = Place::new();
    let args: Vec<String> = place
        .confinement()
        .args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let at = |flag: &str, path: &Path| {
        args.windows(2)
            .position(|w| w[0] == flag && w[1] == path.display().to_string())
            .unwrap_or_else(|| panic!("{flag} {} missing: {args:?}", path.display()))
    };
    let home = at("--bind", &place.root.join("private-home"));
    let tools = at("--ro-bind-try", &place.root.join("tools"));
    let work = at("--bind", &place.root.join("work"));
    let protected = at("--ro-bind", &place.root.join("work/settings"));
    assert!(home < tools && tools < work && work < protected, "{args:?}");
    assert_eq!(&args[..2], NAMESPACES);
}

#[test]
fn merged_usr_links_are_links_and_real_directories_are_bound() {
    let root = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("usr/bin", root.path().join("bin")).unwrap();
    std::fs::create_dir(root.path().join("lib64")).unwrap();
    let args = system_args_of(root.path()).join(" ");
    assert!(args.contains("--symlink usr/bin /bin"), "{args}");
    assert!(args.contains("--ro-bind /lib64 /lib64"), "{args}");
    assert!(!args.contains("/sbin"), "{args}");
    assert!(args.contains("--ro-bind-try /etc/ssl /etc/ssl"), "{args}");
    assert!(!args.contains("shadow"), "{args}");
}

/// Issue 48: a sandbox started by its command holds the passed variables alone, in every
/// process inside (bubblewrap's own, PID 1, included), and a blanked credential reads empty.
#[test]
fn the_environment_is_what_was_passed_and_credentials_read_empty() {
    let place = Place::new();
    let credentials = place.root.join("tools/credentials.toml");
    std::fs::write(&credentials, "token = \"registry-secret\"").unwrap();
    let confinement = Confinement {
        passed: passed_from(
            [
                ("PATH".to_string(), "/usr/bin:/bin".to_string()),
                ("LC_ALL".into(), "C".into()),
                ("AGENT_SETTING".into(), "on".into()),
                ("AWS_SECRET".into(), "aws-secret".into()),
            ]
            .into_iter(),
            &["AGENT_*".to_string()],
        ),
        blanked: vec![credentials.clone()],
        ..place.confinement()
    };
    assert_eq!(confinement.passed.len(), 3, "{:?}", confinement.passed);
    let bwrap = support::host().bwrap().expect("bubblewrap works here");
    let script = format!(
        "cat /proc/1/environ /proc/self/environ | tr '\\0' '\\n'; echo; cat '{}'; echo end",
        credentials.display()
    );
    let words = confinement.command(bwrap, ["/bin/sh".to_string(), "-c".into(), script]);
    let out = Command::new(&words[0])
        .args(&words[1..])
        .env("DRYDOCK_SECRET", "drydock-secret")
        .env("AWS_SECRET", "aws-secret")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for secret in ["drydock-secret", "aws-secret", "registry-secret"] {
        assert!(!text.contains(secret), "{secret} inside: {text}");
    }
    for seen in [
        "AGENT_SETTING=on",
        "LC_ALL=C",
        "CHOSEN=inside",
        "PATH=/usr/bin:/bin",
    ] {
        assert!(text.contains(seen), "{seen} missing: {text}");
    }
    assert!(text.trim_end().ends_with("end"), "{text}");
}

/// Issue 48: nothing inside makes a user namespace of its own (bubblewrap 0.8, as CI has).
#[test]
fn no_user_namespace_is_made_inside() {
    let place = Place::new();
    assert_eq!(
        support::host().no_nesting(),
        NO_NESTING,
        "{}",
        support::host().describe()
    );
    let (code, out) = inside(&place.confinement(), "unshare -U true && echo NESTED");
    assert_ne!(code, 0, "{out}");
    assert!(!out.contains("NESTED"), "{out}");
}

/// Issue 48: a cargo config's registry tokens and credential providers are not shown to a
/// sandbox; the rest of it (a mirror, offline settings) is.
#[test]
fn a_cargo_config_loses_its_tokens_and_keeps_the_rest() {
    let config = "[registry]\ntoken = \"cio-secret\"\ndefault = \"mine\"\n\
                  [registries.mine]\nindex = \"sparse+https://example.com/\"\ntoken = \"mine-secret\"\n\
                  credential-provider = \"cargo:token-from-stdout pass\"\n\
                  [source.crates-io]\nreplace-with = \"mirror\"\n[net]\noffline = true\n";
    let kept = without_tokens(config).unwrap();
    for secret in ["cio-secret", "mine-secret", "token-from-stdout"] {
        assert!(!kept.contains(secret), "{secret} in {kept}");
    }
    for setting in [
        "replace-with",
        "offline",
        "sparse+https://example.com/",
        "default",
    ] {
        assert!(kept.contains(setting), "{setting} lost: {kept}");
    }
    assert_eq!(without_tokens("[net]\noffline = true\n"), None);
    assert_eq!(without_tokens("not = [toml").as_deref(), Some(""));
}
