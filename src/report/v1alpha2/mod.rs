//! The output contract's types, `etcdnet.kubectl.io/v1alpha2`: what `-o json|yaml` prints, and
//! whose JSON Schema is generated. Each is built from its domain type with `From`.

/// A contract enum of unit variants, one for each of the domain enum's, with `From` both ways
/// (the domain keeps the logic; a contract value asks it through the conversion).
macro_rules! mirror_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident from $domain:path {
            $($(#[$vm:meta])* $v:ident,)*
        }
    ) => {
        $(#[$m])*
        pub enum $name {
            $($(#[$vm])* $v,)*
        }

        impl From<$domain> for $name {
            fn from(d: $domain) -> $name {
                type D = $domain;
                match d {
                    $(D::$v => $name::$v,)*
                }
            }
        }

        impl From<$name> for $domain {
            fn from(c: $name) -> $domain {
                type D = $domain;
                match c {
                    $($name::$v => D::$v,)*
                }
            }
        }
    };
}

mod cluster;
mod node;

pub use cluster::*;
pub use node::*;

#[cfg(test)]
mod tests;
