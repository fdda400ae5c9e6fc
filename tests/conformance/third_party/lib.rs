//! Nothing: this package only carries third-party tests and examples (Cargo.toml).
