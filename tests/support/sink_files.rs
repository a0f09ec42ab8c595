//! What a file sink wrote: the lines of its finished files, in order.

use std::path::Path;

/// The JSON lines of the finished files in `dir`.
pub fn file_lines(dir: &Path) -> Vec<Vec<u8>> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .expect("the sink's directory")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort();
    names
        .iter()
        .flat_map(|name| {
            let text = std::fs::read(dir.join(name)).expect("a sink file");
            text.split(|b| *b == b'\n')
                .filter(|line| !line.is_empty())
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
}
