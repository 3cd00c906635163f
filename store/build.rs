//! `sqlx::migrate!` embeds `/migrations` at compile time; without this, a new migration file
//! would not rebuild the crate (sqlx's documented recipe).
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
