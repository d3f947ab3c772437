//! Upstream enums with their exact wire names: glue types, block strategies, handle codes.

use std::fmt;
use std::str::FromStr;

/// `registryGroup` value executors register under.
pub const REGISTRY_GROUP_EXECUTOR: &str = "EXECUTOR";

/// The result code of one job execution, as carried by a callback (`handleCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleCode {
    Success,
    Fail,
    Timeout,
}

impl HandleCode {
    pub const fn code(self) -> i32 {
        match self {
            Self::Success => 200,
            Self::Fail => 500,
            Self::Timeout => 502,
        }
    }
}

/// How a job is implemented (`glueType`). Names match upstream's `GlueTypeEnum`, plus `GLUE_WASM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GlueType {
    Bean,
    GlueGroovy,
    GlueShell,
    GluePython,
    GluePython2,
    GlueNodejs,
    GluePhp,
    GluePowershell,
    /// jobwheel's sandboxed WebAssembly module type; only our own components know it.
    GlueWasm,
}

impl GlueType {
    pub const ALL: [Self; 9] = [
        Self::Bean,
        Self::GlueGroovy,
        Self::GlueShell,
        Self::GluePython,
        Self::GluePython2,
        Self::GlueNodejs,
        Self::GluePowershell,
        Self::GluePhp,
        Self::GlueWasm,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Self::Bean => "BEAN",
            Self::GlueGroovy => "GLUE_GROOVY",
            Self::GlueShell => "GLUE_SHELL",
            Self::GluePython => "GLUE_PYTHON",
            Self::GluePython2 => "GLUE_PYTHON2",
            Self::GlueNodejs => "GLUE_NODEJS",
            Self::GluePhp => "GLUE_PHP",
            Self::GluePowershell => "GLUE_POWERSHELL",
            Self::GlueWasm => "GLUE_WASM",
        }
    }

    /// Upstream's display title (`desc`).
    pub const fn title(self) -> &'static str {
        match self {
            Self::Bean => "BEAN",
            Self::GlueGroovy => "GLUE(Java)",
            Self::GlueShell => "GLUE(Shell)",
            Self::GluePython => "GLUE(Python3)",
            Self::GluePython2 => "GLUE(Python2)",
            Self::GlueNodejs => "GLUE(Nodejs)",
            Self::GluePhp => "GLUE(PHP)",
            Self::GluePowershell => "GLUE(PowerShell)",
            Self::GlueWasm => "GLUE(Wasm)",
        }
    }

    /// Interpreter and script-file suffix for script types (3.4.2 commands), `None` otherwise.
    pub const fn script(self) -> Option<(&'static str, &'static str)> {
        match self {
            Self::GlueShell => Some(("bash", ".sh")),
            Self::GluePython => Some(("python3", ".py")),
            Self::GluePython2 => Some(("python", ".py")),
            Self::GlueNodejs => Some(("node", ".js")),
            Self::GluePhp => Some(("php", ".php")),
            Self::GluePowershell => Some(("pwsh", ".ps1")),
            Self::Bean | Self::GlueGroovy | Self::GlueWasm => None,
        }
    }

    pub const fn is_script(self) -> bool {
        self.script().is_some()
    }

    /// Whether a job of this type has a GLUE source that the admin keeps, versions and sends in
    /// its triggers: the scripts and GLUE(Java). (A `GLUE_WASM` job's code is a module.)
    pub const fn carries_source(self) -> bool {
        self.is_script() || matches!(self, Self::GlueGroovy)
    }
}

impl fmt::Display for GlueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error for a name that is not one of an enum's wire names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName(pub String);

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown name {:?}", self.0)
    }
}

impl std::error::Error for UnknownName {}

impl FromStr for GlueType {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|g| g.name() == s).ok_or_else(|| UnknownName(s.to_owned()))
    }
}

/// What an executor does with a trigger for a job that is busy (`executorBlockStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockStrategy {
    SerialExecution,
    DiscardLater,
    CoverEarly,
}

impl BlockStrategy {
    pub const ALL: [Self; 3] = [Self::SerialExecution, Self::DiscardLater, Self::CoverEarly];

    pub const fn name(self) -> &'static str {
        match self {
            Self::SerialExecution => "SERIAL_EXECUTION",
            Self::DiscardLater => "DISCARD_LATER",
            Self::CoverEarly => "COVER_EARLY",
        }
    }

    /// The executor-side English title, used verbatim in upstream messages.
    pub const fn title(self) -> &'static str {
        match self {
            Self::SerialExecution => "Serial execution",
            Self::DiscardLater => "Discard Later",
            Self::CoverEarly => "Cover Early",
        }
    }

    /// Parses a wire value; like upstream, anything unknown or empty means serial execution.
    pub fn from_wire(s: &str) -> Self {
        Self::ALL.into_iter().find(|b| b.name() == s).unwrap_or(Self::SerialExecution)
    }
}

impl fmt::Display for BlockStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
