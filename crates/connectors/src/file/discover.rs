//! Which files a `path` option names: a file, every regular file of a directory, or the
//! regular files a glob pattern matches.

use std::path::{Path, PathBuf};

use crate::ConnectorError;

/// The regular files `path` names now, in name order. A path that is neither a file, a
/// directory nor a pattern matching anything names no file (yet).
pub(super) fn matching_files(path: &str) -> Result<Vec<String>, ConnectorError> {
    let as_path = Path::new(path);
    let candidates: Vec<PathBuf> = if as_path.is_dir() {
        std::fs::read_dir(as_path)
            .map_err(|e| ConnectorError::Upstream(format!("cannot list {path}: {e}")))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .collect()
    } else if as_path.is_file() {
        vec![as_path.to_path_buf()]
    } else {
        glob::glob(path)
            .map_err(|e| ConnectorError::InvalidOption {
                option: "path".into(),
                reason: format!("\"{path}\" is not a valid pattern: {e}"),
            })?
            .filter_map(|entry| match entry {
                Ok(path) => Some(path),
                Err(e) => {
                    tracing::warn!(error = %e, "a path matching the file source's pattern cannot be read");
                    None
                }
            })
            .collect()
    };
    let mut files: Vec<String> = candidates
        .into_iter()
        .filter(|candidate| candidate.is_file())
        .filter_map(|candidate| match candidate.into_os_string().into_string() {
            Ok(name) => Some(name),
            Err(name) => {
                tracing::warn!(path = ?name, "skipping a file whose name is not UTF-8");
                None
            }
        })
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_a_file_and_a_pattern() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.jsonl", "a.jsonl", "c.csv"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub.jsonl")).unwrap();
        let root = dir.path().to_str().unwrap();
        let names = |files: Vec<String>| {
            files
                .into_iter()
                .map(|f| f.rsplit('/').next().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(matching_files(root).unwrap()),
            ["a.jsonl", "b.jsonl", "c.csv"]
        );
        assert_eq!(
            names(matching_files(&format!("{root}/*.jsonl")).unwrap()),
            ["a.jsonl", "b.jsonl"]
        );
        assert_eq!(
            names(matching_files(&format!("{root}/c.csv")).unwrap()),
            ["c.csv"]
        );
        assert!(matching_files(&format!("{root}/missing"))
            .unwrap()
            .is_empty());
        assert!(matching_files(&format!("{root}/[")).is_err());
    }
}
