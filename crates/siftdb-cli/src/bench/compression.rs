//! The compression flags: db_bench's `--compression_type` and `--min_level_to_compress`, and
//! siftdb's `--compression_per_level`, mapped onto [`Options::compression`] and
//! [`Options::compression_per_level`]; db_bench's `--compression_max_dict_bytes` and
//! `--compression_zstd_max_train_bytes` onto the zstd dictionary options, and their
//! `--bottommost_` forms onto the bottommost dictionary options.
//!
//! siftdb has no snappy. db_bench's default `--compression_type=snappy` maps to LZ4, the codec of
//! the same class (fast, byte-oriented, no entropy coding), with a note on stderr; it is never
//! silently turned into no compression.

use super::flags::Flags;
use siftdb::options::Compression;
use siftdb::Options;

/// What the codec flags accept, for error messages.
const ACCEPTED: &str = "none, lz4, zstd, snappy (runs as lz4)";

/// The codec named `name` (case-insensitive); `zstd` at `zstd_level`. `snappy` sets `*snappy`
/// (the caller prints the note once). `flag` names the flag in errors.
fn parse_codec(
    name: &str,
    zstd_level: i32,
    flag: &str,
    snappy: &mut bool,
) -> Result<Compression, String> {
    match name.trim().to_ascii_lowercase().as_str() {
        "none" | "no" => Ok(Compression::None),
        "lz4" => Ok(Compression::Lz4),
        "zstd" if !(1..=22).contains(&zstd_level) => {
            Err(format!("--zstd_level={zstd_level} is outside 1..=22"))
        }
        "zstd" => Ok(Compression::Zstd(zstd_level)),
        "snappy" => {
            *snappy = true;
            Ok(Compression::Lz4)
        }
        other => Err(format!("unsupported {flag}={other:?}; accepted: {ACCEPTED}")),
    }
}

/// Sets `opts.compression`, `opts.compression_per_level` and the dictionary options from the
/// flags (their ranges are checked when the database opens).
pub fn apply(flags: &Flags, opts: &mut Options) -> Result<(), String> {
    let mut snappy = false;
    let level = flags.zstd_level;
    opts.compression =
        parse_codec(&flags.compression_type, level, "--compression_type", &mut snappy)?;
    opts.compression_per_level = match (&flags.compression_per_level, flags.min_level_to_compress) {
        (Some(_), m) if m >= 0 => {
            return Err("give --compression_per_level or --min_level_to_compress, not both".into())
        }
        (Some(list), _) => list
            .split(',')
            .map(|name| parse_codec(name, level, "--compression_per_level", &mut snappy))
            .collect::<Result<Vec<_>, _>>()?,
        // db_bench: levels below the minimum uncompressed, the rest `--compression_type`.
        (None, m) if m > 0 => {
            let mut list = vec![Compression::None; m as usize];
            list.push(opts.compression);
            list
        }
        (None, _) => Vec::new(),
    };
    if snappy {
        eprintln!("siftdb bench: snappy is not built in; using lz4");
    }
    opts.compression_max_dict_bytes = flags.compression_max_dict_bytes;
    opts.compression_zstd_max_train_bytes = flags.compression_zstd_max_train_bytes;
    opts.compression_use_zstd_dict_trainer = flags.compression_use_zstd_dict_trainer;
    opts.bottommost_compression_max_dict_bytes = flags.bottommost_compression_max_dict_bytes;
    opts.bottommost_compression_zstd_max_train_bytes =
        flags.bottommost_compression_zstd_max_train_bytes;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        flags: Flags,
    }

    fn options(args: &[&str]) -> Result<Options, String> {
        let cli = Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        let mut opts = Options::default();
        apply(&cli.flags, &mut opts)?;
        Ok(opts)
    }

    #[test]
    fn each_codec_name_selects_its_compression_and_snappy_runs_as_lz4() {
        let cases = [
            ("none", Compression::None),
            ("lz4", Compression::Lz4),
            ("LZ4", Compression::Lz4),
            ("zstd", Compression::Zstd(3)),
            ("snappy", Compression::Lz4),
        ];
        for (name, want) in cases {
            let opts = options(&[&format!("--compression_type={name}")]).unwrap();
            assert_eq!(opts.compression, want, "{name}");
            assert!(opts.compression_per_level.is_empty());
        }
        // db_bench's default is snappy: LZ4, not none.
        assert_eq!(options(&[]).unwrap().compression, Compression::Lz4);
    }

    #[test]
    fn unknown_codec_is_an_error_naming_the_accepted_ones() {
        for args in [&["--compression_type=zlib"][..], &["--compression_per_level=none,bz2"]] {
            let err = options(args).unwrap_err();
            assert!(err.contains("accepted: none, lz4, zstd"), "{err}");
        }
        let err = options(&["--compression_type=zstd", "--zstd_level=40"]).unwrap_err();
        assert!(err.contains("--zstd_level=40"), "{err}");
    }

    #[test]
    fn dictionary_flags_set_the_dictionary_options() {
        let opts = options(&[]).unwrap();
        assert_eq!(
            (opts.compression_max_dict_bytes, opts.compression_zstd_max_train_bytes),
            (0, 0)
        );
        let opts = options(&[
            "--compression_type=zstd",
            "--compression_max_dict_bytes=16384",
            "--compression_zstd_max_train_bytes=1638400",
        ])
        .unwrap();
        assert_eq!(
            (opts.compression_max_dict_bytes, opts.compression_zstd_max_train_bytes),
            (16384, 1_638_400)
        );
        assert!(opts.compression_use_zstd_dict_trainer, "zstd's trainer by default, as db_bench");
        let opts = options(&["--compression_use_zstd_dict_trainer=false"]).unwrap();
        assert!(!opts.compression_use_zstd_dict_trainer);
        let bottom = |o: &Options| {
            (o.bottommost_compression_max_dict_bytes, o.bottommost_compression_zstd_max_train_bytes)
        };
        assert_eq!(bottom(&options(&[]).unwrap()), (None, None));
        let opts = options(&[
            "--bottommost_compression_max_dict_bytes=16384",
            "--bottommost_compression_zstd_max_train_bytes=1638400",
        ])
        .unwrap();
        assert_eq!(bottom(&opts), (Some(16384), Some(1_638_400)));
        assert_eq!(opts.compression_max_dict_bytes, 0, "the all-levels size stays its own");
    }

    #[test]
    fn per_level_list_and_min_level_to_compress_fill_compression_per_level() {
        let opts = options(&["--compression_per_level=none,none,lz4,zstd"]).unwrap();
        use Compression::{Lz4, Zstd};
        assert_eq!(
            opts.compression_per_level,
            [Compression::None, Compression::None, Lz4, Zstd(3)]
        );
        assert_eq!(opts.compression_for_level(9), Zstd(3));
        let opts = options(&["--compression_type=zstd", "--min_level_to_compress=2"]).unwrap();
        assert_eq!(opts.compression_per_level, [Compression::None, Compression::None, Zstd(3)]);
        let opts = options(&["--compression_type=lz4", "--min_level_to_compress=0"]).unwrap();
        assert!(opts.compression_per_level.is_empty());
        assert_eq!(opts.compression_for_level(0), Lz4);
        let both = ["--compression_per_level=lz4", "--min_level_to_compress=1"];
        assert!(options(&both).unwrap_err().contains("not both"));
    }
}
