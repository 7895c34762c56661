//! The arguments each task that `run` starts may take: one allowlist per task.
//!
//! A cargo task (`run` with `task: "doc"`) or a mix task gets only the options its table
//! lists. Anything else (`--manifest-path`, `--config`, `-Z`, `--target-dir`, `+toolchain`,
//! an unknown flag, in any spelling) is refused with an error that names the argument, the
//! task and what the task accepts. Accepted arguments are rewritten into one unambiguous
//! argv: the task name first, then options as `--long` or `--long=value` (so no value is ever
//! read as another option), then positional values, which never start with `-` unless they
//! follow a `--` that the tool reads as the end of its options. Values that name files must
//! resolve inside the project. A configured task without a table here takes no options, only
//! positional values that do not start with `-`.

use std::path::Path;

use super::Toolchain;
use super::arg_values::{self, NameKind, ValueError};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TaskArgError {
    #[error(
        "task name {0:?} is refused: a task name starts with a letter or digit and has only \
         letters, digits and `_.:-`"
    )]
    TaskName(String),
    #[error("`{arg}` is not accepted by `{command}`; {accepts}")]
    NotAccepted {
        arg: String,
        command: String,
        accepts: String,
    },
    #[error("`{option}` of `{command}` needs a value; write it as `{option}=VALUE`")]
    MissingValue { option: String, command: String },
    #[error("`{option}` of `{command}` takes no value, but was given `{arg}`")]
    UnexpectedValue {
        option: String,
        command: String,
        arg: String,
    },
    #[error("`{option}` of `{command}` must be one of {choices}, not {value:?}")]
    NotAChoice {
        option: String,
        command: String,
        choices: String,
        value: String,
    },
    #[error("`{option}` of `{command}` must be a whole number, not {value:?}")]
    NotANumber {
        option: String,
        command: String,
        value: String,
    },
    #[error("`{arg}` is one argument too many for `{command}`; {accepts}")]
    TooManyPositionals {
        arg: String,
        command: String,
        accepts: String,
    },
    #[error("`{command}` needs {needs}")]
    MissingPositional {
        command: String,
        needs: &'static str,
    },
    #[error(transparent)]
    Value(#[from] ValueError),
}

/// The full argv, task name first, of `tool`'s task `task` given the request's `args`;
/// `project` is the directory the task runs in.
pub fn task_argv(
    tool: Toolchain,
    task: &str,
    args: &[String],
    project: &Path,
) -> Result<Vec<String>, TaskArgError> {
    check_task_name(task)?;
    let spec = tool.kit().task_spec(task).unwrap_or(TaskSpec::UNLISTED);
    let parser = Parser {
        spec: &spec,
        command: format!("{} {task}", tool.name()),
        project,
    };
    let (options, positionals) = parser.split(args)?;
    let given: Vec<&str> = options.iter().map(|o| o.option.long).collect();
    let positionals = parser.positionals(&given, positionals)?;
    let mut argv = vec![task.to_string()];
    argv.extend(options.into_iter().flat_map(Accepted::into_args));
    if spec.dashes_end_options && !positionals.is_empty() {
        argv.push("--".into());
    }
    argv.extend(positionals);
    Ok(argv)
}

/// Cargo reads a first argument `+name` as a toolchain and one starting with `-` as its own
/// option: a task name is neither.
fn check_task_name(task: &str) -> Result<(), TaskArgError> {
    let mut chars = task.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c)) {
        return Ok(());
    }
    Err(TaskArgError::TaskName(task.into()))
}

/// What an option's value must be.
#[derive(Debug, Clone, Copy)]
pub enum Value {
    /// Any text; the hint names it in messages.
    Text(&'static str),
    Choice(&'static [&'static str]),
    Integer,
    Name(NameKind),
    Features,
    /// An existing file inside the project.
    ProjectFile,
    /// An existing file inside the project, named literally: the task would expand
    /// wildcards, so `*?[]{}` are refused.
    LiteralProjectFile,
    /// A file or directory the task creates, inside the project.
    ProjectOutput,
}

impl Value {
    fn hint(self) -> String {
        match self {
            Value::Text(hint) => hint.into(),
            Value::Choice(choices) => choices.join("|"),
            Value::Integer => "N".into(),
            Value::Name(NameKind::Package) => "SPEC".into(),
            Value::Name(NameKind::Target) => "NAME".into(),
            Value::Name(NameKind::Feature) | Value::Features => "FEATURES".into(),
            Value::Name(NameKind::Tag) => "TAG".into(),
            Value::ProjectFile | Value::LiteralProjectFile => "FILE (inside the project)".into(),
            Value::ProjectOutput => "DIR (inside the project)".into(),
        }
    }
}

/// Whether an option takes a value, and how it is passed on.
#[derive(Debug, Clone, Copy)]
pub enum Takes {
    Nothing,
    /// `--long=VALUE`, `--long VALUE` or `-s VALUE`; passed on as `--long=VALUE`.
    Value(Value),
    /// clap's `--long [VALUE]`: the next argument is the value unless it starts with `-`.
    Optional(Value),
    /// Passed on as two arguments, to a task that matches its argv literally
    /// (`mix help --search PATTERN`); the value must not start with `-`.
    Separate(Value),
}

#[derive(Debug)]
pub struct Opt {
    pub long: &'static str,
    pub short: Option<char>,
    pub takes: Takes,
}

pub const fn flag(long: &'static str, short: Option<char>) -> Opt {
    Opt {
        long,
        short,
        takes: Takes::Nothing,
    }
}

pub const fn valued(long: &'static str, short: Option<char>, value: Value) -> Opt {
    Opt {
        long,
        short,
        takes: Takes::Value(value),
    }
}

pub const fn optional(long: &'static str, short: Option<char>, value: Value) -> Opt {
    Opt {
        long,
        short,
        takes: Takes::Optional(value),
    }
}

impl Opt {
    fn describe(&self) -> String {
        let short = self.short.map(|s| format!("-{s}/")).unwrap_or_default();
        let value = match self.takes {
            Takes::Nothing => String::new(),
            Takes::Value(v) => format!("={}", v.hint()),
            Takes::Optional(v) => format!("[={}]", v.hint()),
            Takes::Separate(v) => format!(" {}", v.hint()),
        };
        format!("{short}--{}{value}", self.long)
    }
}

/// The positional values a task takes.
#[derive(Debug, Clone, Copy)]
pub enum Positionals {
    None,
    /// At most one value.
    One(Value, &'static str),
    /// Any number of values that do not start with `-` (tasks without a table).
    AnyText,
    /// `mix run`: a script inside the project unless `--eval` is given, then the
    /// program's own arguments (free text: they follow `--`).
    Script,
    /// `mix xref`: `callers MODULE`, `trace FILE` or `graph`.
    XrefCommand,
}

impl Positionals {
    fn describe(self) -> &'static str {
        match self {
            Positionals::None => "no positional arguments",
            Positionals::One(_, what) => what,
            Positionals::AnyText => "positional values that do not start with `-`",
            Positionals::Script => {
                "then a script inside the project (unless --eval is given) and the program's \
                 own arguments"
            }
            Positionals::XrefCommand => "one of `callers MODULE`, `trace FILE` or `graph`",
        }
    }
}

/// The arguments one task takes: a toolchain's table (`Kit::task_spec`).
pub struct TaskSpec {
    /// Groups of options, so tables can share common ones.
    pub options: &'static [&'static [Opt]],
    pub positionals: Positionals,
    /// The tool reads `--` as the end of its options: positional values are passed after one.
    pub dashes_end_options: bool,
    /// A configured task without a table: no options, only plain positional values.
    pub unlisted: bool,
}

impl TaskSpec {
    const UNLISTED: TaskSpec = TaskSpec {
        options: &[],
        positionals: Positionals::AnyText,
        dashes_end_options: false,
        unlisted: true,
    };

    fn find(&self, matches: impl Fn(&Opt) -> bool) -> Option<&'static Opt> {
        self.options
            .iter()
            .flat_map(|group| group.iter())
            .find(|o| matches(o))
    }

    fn describe(&self) -> String {
        if self.unlisted {
            return "this task has no argument allowlist in drydock, so it takes no options, \
                    only positional values that do not start with `-`"
                .into();
        }
        let options: Vec<String> = self
            .options
            .iter()
            .flat_map(|group| group.iter())
            .map(Opt::describe)
            .collect();
        match (options.is_empty(), self.positionals) {
            (true, Positionals::None) => "it takes no arguments".into(),
            (true, positionals) => format!("it takes no options, only {}", positionals.describe()),
            (false, positionals) => format!(
                "it accepts {}; {}",
                options.join(", "),
                positionals.describe()
            ),
        }
    }
}

/// One accepted option with its checked value.
struct Accepted {
    option: &'static Opt,
    value: Option<String>,
}

impl Accepted {
    fn into_args(self) -> Vec<String> {
        let long = format!("--{}", self.option.long);
        match (self.option.takes, self.value) {
            (Takes::Separate(_), Some(value)) => vec![long, value],
            (_, Some(value)) => vec![format!("{long}={value}")],
            (_, None) => vec![long],
        }
    }
}

struct Parser<'a> {
    spec: &'a TaskSpec,
    command: String,
    project: &'a Path,
}

impl Parser<'_> {
    /// The request's args as accepted options and (not yet checked) positional values.
    fn split(&self, args: &[String]) -> Result<(Vec<Accepted>, Vec<String>), TaskArgError> {
        let mut options = Vec::new();
        let mut positionals = Vec::new();
        let mut rest = args.iter().peekable();
        while let Some(arg) = rest.next() {
            let program_args_follow =
                matches!(self.spec.positionals, Positionals::Script) && !positionals.is_empty();
            if arg == "--" || program_args_follow {
                if arg != "--" {
                    positionals.push(arg.clone());
                }
                positionals.extend(rest.by_ref().cloned());
                break;
            }
            if arg.len() > 1 && arg.starts_with('-') {
                options.extend(self.option(arg, &mut rest)?);
            } else {
                positionals.push(arg.clone());
            }
        }
        Ok((options, positionals))
    }

    /// One option argument: `--long`, `--long=value`, `-s`, or a cluster of switches `-vq`;
    /// its value may be the next argument.
    fn option(
        &self,
        arg: &str,
        rest: &mut std::iter::Peekable<std::slice::Iter<'_, String>>,
    ) -> Result<Vec<Accepted>, TaskArgError> {
        let not_accepted = || TaskArgError::NotAccepted {
            arg: arg.into(),
            command: self.command.clone(),
            accepts: self.spec.describe(),
        };
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let option = self
                .spec
                .find(|o| o.long == name)
                .ok_or_else(not_accepted)?;
            return Ok(vec![self.value_of(option, arg, inline, rest)?]);
        }
        let shorts: Vec<char> = arg[1..].chars().collect();
        let options: Vec<&'static Opt> = shorts
            .iter()
            .map(|c| self.spec.find(|o| o.short == Some(*c)))
            .collect::<Option<_>>()
            .ok_or_else(not_accepted)?;
        if let [option] = options[..] {
            return Ok(vec![self.value_of(option, arg, None, rest)?]);
        }
        // A cluster (`-vv`) is read as separate switches; one that takes a value would swallow
        // the rest of the cluster, so it is refused.
        if options.iter().all(|o| matches!(o.takes, Takes::Nothing)) {
            return Ok(options
                .into_iter()
                .map(|option| Accepted {
                    option,
                    value: None,
                })
                .collect());
        }
        Err(not_accepted())
    }

    fn value_of(
        &self,
        option: &'static Opt,
        arg: &str,
        inline: Option<&str>,
        rest: &mut std::iter::Peekable<std::slice::Iter<'_, String>>,
    ) -> Result<Accepted, TaskArgError> {
        let name = format!("--{}", option.long);
        let next_is_value = rest.peek().is_some_and(|next| !next.starts_with('-'));
        let raw = match (option.takes, inline) {
            (Takes::Nothing, None) => None,
            (Takes::Nothing, Some(_)) => {
                return Err(TaskArgError::UnexpectedValue {
                    option: name,
                    command: self.command.clone(),
                    arg: arg.into(),
                });
            }
            (_, Some(value)) => Some(value.to_string()),
            (Takes::Optional(_), None) if !next_is_value => None,
            (_, None) if next_is_value => rest.next().cloned(),
            (_, None) => {
                return Err(TaskArgError::MissingValue {
                    option: name,
                    command: self.command.clone(),
                });
            }
        };
        let value = match (option.takes, raw) {
            (Takes::Value(kind) | Takes::Optional(kind), Some(raw)) => {
                Some(self.check_value(&name, kind, raw)?)
            }
            (Takes::Separate(kind), Some(raw)) => {
                let what = self.what(&name);
                arg_values::not_an_option(&what, &raw, NOT_DASHED)?;
                Some(self.check_value(&name, kind, raw)?)
            }
            (_, raw) => raw,
        };
        Ok(Accepted { option, value })
    }

    /// How a value is named in errors: "`--require` of `mix run`", or "an argument of
    /// `mix run`" for a positional value (`name` "").
    fn what(&self, name: &str) -> String {
        match name {
            "" => format!("an argument of `{}`", self.command),
            _ => format!("`{name}` of `{}`", self.command),
        }
    }

    fn check_value(&self, name: &str, kind: Value, raw: String) -> Result<String, TaskArgError> {
        let what = self.what(name);
        match kind {
            Value::Text(_) => Ok(raw),
            Value::Choice(choices) if choices.contains(&raw.as_str()) => Ok(raw),
            Value::Choice(choices) => Err(TaskArgError::NotAChoice {
                option: name.into(),
                command: self.command.clone(),
                choices: choices.join(", "),
                value: raw,
            }),
            Value::Integer if raw.parse::<i64>().is_ok() => Ok(raw),
            Value::Integer => Err(TaskArgError::NotANumber {
                option: name.into(),
                command: self.command.clone(),
                value: raw,
            }),
            Value::Name(kind) => Ok(arg_values::name(&what, &raw, kind)?.to_string()),
            Value::Features => Ok(arg_values::features(&what, &[raw])?),
            Value::ProjectFile => {
                arg_values::project_file(&what, self.project, &raw)?;
                Ok(raw)
            }
            Value::LiteralProjectFile if raw.contains(['*', '?', '[', ']', '{', '}']) => {
                Err(ValueError::Malformed {
                    what,
                    value: raw,
                    expected: "a file named literally (the task would expand `*?[]{}`)",
                }
                .into())
            }
            Value::LiteralProjectFile => {
                arg_values::project_file(&what, self.project, &raw)?;
                Ok(raw)
            }
            Value::ProjectOutput => {
                arg_values::project_output(&what, self.project, &raw)?;
                Ok(raw)
            }
        }
    }

    /// The positional values, checked against what the task takes.
    fn positionals(
        &self,
        given: &[&str],
        values: Vec<String>,
    ) -> Result<Vec<String>, TaskArgError> {
        match self.spec.positionals {
            Positionals::None => self.at_most(0, values),
            Positionals::One(kind, _) => {
                let values = self.at_most(1, values)?;
                for value in &values {
                    self.positional_value(kind, value)?;
                }
                Ok(values)
            }
            Positionals::AnyText => {
                for value in &values {
                    self.positional_value(Value::Text("TEXT"), value)?;
                }
                Ok(values)
            }
            Positionals::Script => {
                if let Some(script) = values.first().filter(|_| !given.contains(&"eval")) {
                    self.positional_value(Value::ProjectFile, script)?;
                }
                Ok(values)
            }
            Positionals::XrefCommand => self.xref_command(values),
        }
    }

    fn at_most(&self, max: usize, values: Vec<String>) -> Result<Vec<String>, TaskArgError> {
        match values.get(max) {
            Some(extra) => Err(TaskArgError::TooManyPositionals {
                arg: extra.clone(),
                command: self.command.clone(),
                accepts: self.spec.describe(),
            }),
            None => Ok(values),
        }
    }

    /// A positional value: never one that starts with `-`, whatever else it must be.
    fn positional_value(&self, kind: Value, value: &str) -> Result<(), TaskArgError> {
        arg_values::not_an_option(&self.what(""), value, NOT_DASHED)?;
        self.check_value("", kind, value.to_string()).map(|_| ())
    }

    fn xref_command(&self, values: Vec<String>) -> Result<Vec<String>, TaskArgError> {
        let takes = Positionals::XrefCommand.describe();
        let operand = match values.first().map(String::as_str) {
            None => None,
            Some("graph") => return self.at_most(1, values),
            Some("callers") => Some(Value::Text("MODULE")),
            Some("trace") => Some(Value::ProjectFile),
            Some(other) => {
                return Err(TaskArgError::NotAccepted {
                    arg: other.into(),
                    command: self.command.clone(),
                    accepts: self.spec.describe(),
                });
            }
        };
        let Some(kind) = operand else {
            return Err(TaskArgError::MissingPositional {
                command: self.command.clone(),
                needs: takes,
            });
        };
        let values = self.at_most(2, values)?;
        let Some(operand) = values.get(1) else {
            return Err(TaskArgError::MissingPositional {
                command: self.command.clone(),
                needs: takes,
            });
        };
        self.positional_value(kind, operand)?;
        Ok(values)
    }
}

const NOT_DASHED: &str = "a value that does not start with `-`";

#[cfg(test)]
mod tests;
