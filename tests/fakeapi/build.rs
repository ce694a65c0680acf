// The same decision as the plugin crate makes for its lab tests (see the file).
include!("../../build.rs");
