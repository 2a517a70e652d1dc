//! How nodelay spells the options its libraries name in their messages (`nodelay_flags::Flag`):
//! read from the clap definitions, so a flag renamed there is renamed in every message.

use clap::CommandFactory;
use nodelay_flags::Flag;
use std::sync::OnceLock;

/// Makes every `Flag` the libraries show read as this command line spells it.
pub fn install_flag_spelling() {
    nodelay_flags::install_spelling(spelled);
}

fn spelled(flag: Flag) -> &'static str {
    static SPELLINGS: OnceLock<Vec<&'static str>> = OnceLock::new();
    SPELLINGS.get_or_init(spellings)[flag as usize]
}

/// Each flag's spelling, in `Flag::ALL`'s order. Built once, on the first message that names a
/// flag, and kept for the life of the process (a few hundred bytes).
fn spellings() -> Vec<&'static str> {
    let arguments = long_flags_by_id();
    Flag::ALL
        .iter()
        .map(|flag| {
            let spelling = match arguments.iter().find(|(id, _)| id == flag.arg_id()) {
                Some((_, long)) => format!("--{long}"),
                // Not reached: a test holds every flag to an argument. The id, dashed, is
                // still the name a user would recognise.
                None => flag.id_spelling(),
            };
            &*spelling.leak()
        })
        .collect()
}

/// Every argument with a long name, in every subcommand: its id and that name.
fn long_flags_by_id() -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut commands = vec![crate::Cli::command()];
    while let Some(command) = commands.pop() {
        for argument in command.get_arguments() {
            if let Some(long) = argument.get_long() {
                found.push((argument.get_id().to_string(), long.to_string()));
            }
        }
        commands.extend(command.get_subcommands().cloned());
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_a_library_names_is_an_argument_spelled_one_way() {
        let arguments = long_flags_by_id();
        for flag in Flag::ALL {
            let longs: Vec<&str> = arguments
                .iter()
                .filter(|(id, _)| id == flag.arg_id())
                .map(|(_, long)| long.as_str())
                .collect();
            assert!(!longs.is_empty(), "{flag:?}: no argument has the id {}", flag.arg_id());
            assert!(longs.iter().all(|long| *long == longs[0]), "{flag:?} is spelled {longs:?}");
        }
        // What a library shows without the CLI (its id, dashed) reads as the CLI spells it:
        // a flag renamed in clap needs its id renamed too.
        for flag in Flag::ALL {
            assert_eq!(spelled(*flag), flag.id_spelling(), "{flag:?}: rename its id with its flag");
        }
    }
}
