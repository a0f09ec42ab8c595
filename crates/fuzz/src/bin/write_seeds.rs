//! Writes every fuzz target's seeds into `cargo fuzz`'s corpus directories
//! (`crates/fuzz/corpus/<target>/`), for coverage-guided runs to start from inputs that reach
//! deep into each target.

use std::path::Path;

fn main() -> std::io::Result<()> {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for target in fuzz::Target::ALL {
        let dir = corpus.join(target.name());
        std::fs::create_dir_all(&dir)?;
        let seeds = target.seeds();
        for (n, seed) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{n}")), seed)?;
        }
        println!(
            "{}: {} seeds in {}",
            target.name(),
            seeds.len(),
            dir.display()
        );
    }
    Ok(())
}
