// SPDX-License-Identifier: MIT
//
// matchit_count: matchit's lookups for bench/router_instructions.sh, the
// counterpart of `bench_router --passes N`: inserts the routes of ROUTES
// (one matchit pattern per line, route i gets value i), checks that path i
// of PATHS reaches route i, then looks every path up PASSES times in file
// order and exits.  Run under callgrind with PASSES and with 0, the
// difference of the instruction counts is PASSES x paths lookups.
//
//   matchit_count ROUTES PATHS PASSES
use std::hint::black_box;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: matchit_count ROUTES PATHS PASSES");
        std::process::exit(2);
    }
    let text = |p: &str| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {}", p, e));
    let routes = text(&args[1]);
    let paths_text = text(&args[2]);
    let paths: Vec<&str> = paths_text.lines().collect();
    let passes: usize = args[3].parse().expect("PASSES: a count");
    let mut router = matchit::Router::new();
    for (i, pattern) in routes.lines().enumerate() {
        router.insert(pattern, i).expect(pattern);
    }
    for (i, path) in paths.iter().enumerate() {
        assert_eq!(*router.at(path).expect(path).value, i, "{}", path);
    }
    let mut acc = 0usize;
    for _ in 0..passes {
        for path in paths.iter() {
            acc += *black_box(router.at(black_box(*path)).unwrap().value);
        }
    }
    black_box(acc);
}
