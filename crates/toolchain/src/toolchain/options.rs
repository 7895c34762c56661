//! What the toolchains' checks of a request share: refusing an option that another
//! toolchain's projects take.

use super::ToolchainError;

/// `option`, given to a project of `this` toolchain, is refused: only `takers`' projects take
/// it.
pub(super) fn only_for(
    option: &str,
    given: bool,
    takers: &str,
    this: &str,
) -> Result<(), ToolchainError> {
    match given {
        true => Err(ToolchainError::InvalidArgument(format!(
            "`{option}` applies to {takers} projects only; this is a {this} project"
        ))),
        false => Ok(()),
    }
}
