//! The worker's rooms keep a declared order: a room imports only rooms below it, so no import
//! runs up inside `worker/src` (the layering the workspace keeps across crates, kept inside this
//! crate). The rooms are `lib.rs`'s `mod` lines; a new room must be placed in [`LAYERS`] before
//! it builds green. An import is any `crate::room` path outside `//` comments and `#[cfg(test)]`
//! code, and every top-level name of a `use crate::{..}` tree.

use std::{collections::BTreeSet, fs, path::Path};

/// The rooms, bottom first; a room may import the rooms of the layers before its own.
const LAYERS: &[&[&str]] = &[
    // Leaves: credentials and their policy, counters, the allowed origins, peer addresses, the
    // callback hosts and the mount's declaration.
    &[
        "auth",
        "metrics",
        "origins",
        "peers",
        "callback_hosts",
        "mount_spec",
    ],
    &["audit", "stream"],
    &["state"],
    &["remote"],
    &["ops"],
    &["ai_sdk", "sweeps"],
    &["http", "grpc"],
    &["runner", "demo"],
];

fn layer_of(room: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&room))
}

/// The rooms `lib.rs` declares.
fn rooms(src: &Path) -> Vec<String> {
    let lib = fs::read_to_string(src.join("lib.rs")).expect("lib.rs reads");
    lib.lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("pub ").unwrap_or(line);
            line.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_owned)
        })
        .collect()
}

/// The `.rs` files of a room: `room.rs` or everything under `room/`.
fn files(src: &Path, room: &str) -> Vec<std::path::PathBuf> {
    let file = src.join(format!("{room}.rs"));
    if file.is_file() {
        return vec![file];
    }
    let mut found = Vec::new();
    let mut dirs = vec![src.join(room)];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("a room's folder reads") {
            let path = entry.expect("an entry reads").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A file's code as it builds outside tests, with `//` comments removed (a `://` in a URL is
/// kept).
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|line| {
            let mut cut = line.len();
            let bytes = line.as_bytes();
            for at in 0..bytes.len().saturating_sub(1) {
                if bytes[at] == b'/' && bytes[at + 1] == b'/' && (at == 0 || bytes[at - 1] != b':')
                {
                    cut = at;
                    break;
                }
            }
            &line[..cut]
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The rooms a file's code names.
fn imports(code: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(tree) = rest.strip_prefix('{') {
            // The top-level names of a `use crate::{..}` tree.
            let mut depth = 0usize;
            let mut start = true;
            for (offset, c) in tree.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && depth == 0 && !c.is_whitespace() => {
                        named.insert(ident_at(&tree[offset..]).to_owned());
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            named.insert(ident_at(rest).to_owned());
        }
    }
    named
}

#[test]
fn no_import_runs_up_inside_the_worker() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rooms = rooms(&src);
    let unplaced: Vec<&String> = rooms.iter().filter(|r| layer_of(r).is_none()).collect();
    assert!(
        unplaced.is_empty(),
        "rooms without a layer (place them in LAYERS): {unplaced:?}"
    );
    let mut upward = Vec::new();
    for room in &rooms {
        let own = layer_of(room).unwrap_or_default();
        for file in files(&src, room) {
            let text = fs::read_to_string(&file).expect("a source file reads");
            for target in imports(&code(&text)) {
                let Some(theirs) = layer_of(&target) else {
                    continue;
                };
                if target != *room && theirs >= own {
                    let shown = file.strip_prefix(&src).unwrap_or(&file).display();
                    upward.push(format!("{shown}: {room} -> {target}"));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run up or sideways inside worker/src:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_reader_sees_paths_and_use_trees_not_comments() {
    let text = "use crate::{auth::{self, Principal}, ops, state::AppState};\n\
                // crate::http in a comment\n\
                let url = \"http://x\"; crate::stream::Follow::open();\n\
                #[cfg(test)]\nmod tests { use crate::grpc; }";
    let named: Vec<String> = imports(&code(text)).into_iter().collect();
    assert_eq!(named, ["auth", "ops", "state", "stream"]);
}
