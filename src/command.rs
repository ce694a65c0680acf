//! The commands the plugin prints for an admin to paste (next steps, the remediation guard's
//! pause and unpause, the notes of kept pods), built so that nothing read from outside can
//! steer them.
//!
//! - Every value is one shell word: quoted by [`shlex`] (a maintained crate, not a quoting of
//!   our own) when it is not plain, so `$(…)`, `;`, a space or a quote is text, never shell.
//! - A value in a name's place is a Kubernetes name, checked as the API server checks it
//!   ([`name`], [`namespace`]): such a name starts with a letter or digit, so it cannot be read
//!   as an option (`--server=https://…` is not one). A value that is not one is never put in:
//!   a placeholder stands in its place.
//! - Every `kubectl` command carries the run's `--context` and `--kubeconfig` ([`Kubectl`]),
//!   resolved once from the command line and passed down as a value, so a command pasted later
//!   reaches the same Supervisor whatever the current context is by then. They go last, in the
//!   `--flag=value` form: kubectl finds a plugin (`kubectl etcdnet …`) only before the first
//!   flag (`HandlePluginCommand` stops at the first argument starting with `-`), and a value
//!   joined to its flag by `=` is never taken for a flag of its own.

use std::path::Path;

/// What stands in a command for a value that is not a Kubernetes name.
pub(crate) const NOT_A_NAME: &str = "'<not a valid name>'";

/// A value as one shell word: itself when plain, else quoted (a NUL, which no shell word can
/// hold, is dropped first: no Kubernetes name, context or path holds one).
pub(crate) fn quote(s: &str) -> String {
    let s = s.replace('\0', "");
    match shlex::try_quote(&s) {
        Ok(q) => q.into_owned(),
        // Unreachable without a NUL; a placeholder rather than the raw value all the same.
        Err(_) => NOT_A_NAME.to_string(),
    }
}

/// An object's name as a word for a command, when it is one the API server accepts
/// (apimachinery's `IsDNS1123Subdomain`, which `metadata.name` of a custom resource and of most
/// kinds must pass); else [`NOT_A_NAME`].
pub(crate) fn name(s: &str) -> String {
    if crate::names::is_object_name(s) {
        quote(s)
    } else {
        NOT_A_NAME.to_string()
    }
}

/// A namespace as a word for a command (an RFC 1123 label, as `-n` takes it); else
/// [`NOT_A_NAME`].
pub(crate) fn namespace(s: &str) -> String {
    if crate::names::validate_dns1123_label(s).is_ok() {
        quote(s)
    } else {
        NOT_A_NAME.to_string()
    }
}

/// `kubectl` as this run reached the Supervisor: the `--context` and `--kubeconfig` it used,
/// each already a quoted `--flag=value` word. The default carries neither (an offline
/// `analyse` run without the flags).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kubectl {
    /// ` --context=… --kubeconfig=…`, each present when the run had it.
    flags: String,
}

impl Kubectl {
    /// The run's context (the `--context` flag, or the kubeconfig's current context the run
    /// resolved) and its `--kubeconfig` flag.
    pub fn new(context: Option<&str>, kubeconfig: Option<&Path>) -> Kubectl {
        let mut flags = String::new();
        if let Some(c) = context.filter(|c| !c.is_empty()) {
            flags.push_str(&format!(" --context={}", quote(c)));
        }
        if let Some(k) = kubeconfig {
            flags.push_str(&format!(" --kubeconfig={}", quote(&k.to_string_lossy())));
        }
        Kubectl { flags }
    }

    /// The run's ` --context=… --kubeconfig=…` words alone (empty when it had neither), for
    /// a command made below this layer (a 403's `kubectl auth can-i`, `error`).
    pub fn flags(&self) -> &str {
        &self.flags
    }

    /// `kubectl <args> <flags>`: `args` is the plugin's own text, every value in it put
    /// through [`quote`], [`name`] or [`namespace`].
    pub fn run(&self, args: &str) -> String {
        format!("kubectl {args}{}", self.flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_words_and_never_options() {
        assert_eq!(quote("tkc-prod"), "tkc-prod");
        for hostile in ["$(reboot)", "a;b", "`id`", "x y", "it's", "a\nb"] {
            let q = quote(hostile);
            assert_eq!(shlex::split(&q).unwrap(), [hostile], "{q}");
        }
        for not_a_name in ["--server=https://evil", "$(id)", "a;b", "-n", "", "A"] {
            assert_eq!(name(not_a_name), NOT_A_NAME);
            assert_eq!(namespace(not_a_name), NOT_A_NAME);
        }
        assert_eq!(name("tkc.prod"), "tkc.prod");
        assert_eq!(namespace("tkc.prod"), NOT_A_NAME);
        assert_eq!(quote("a\0b"), "ab");
    }

    #[test]
    fn the_run_flags_go_last_and_joined() {
        let k = Kubectl::new(Some("sv admin"), Some(Path::new("/tmp/k c")));
        assert_eq!(
            k.run("get ns"),
            "kubectl get ns --context='sv admin' --kubeconfig='/tmp/k c'"
        );
        let words = shlex::split(&k.run("get ns")).unwrap();
        assert_eq!(words[3], "--context=sv admin");
        assert_eq!(Kubectl::default().run("get ns"), "kubectl get ns");
        let dash = Kubectl::new(Some("--server=https://evil"), None);
        assert_eq!(
            shlex::split(&dash.run("get ns")).unwrap()[3],
            "--context=--server=https://evil"
        );
    }
}
