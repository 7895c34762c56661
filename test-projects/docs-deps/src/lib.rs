//! Version badges for crates.

/// Renders the badge text for `version`: `version-MAJOR.MINOR.PATCH-COLOUR`, where the colour
/// is orange before 1.0.0, purple for a pre-release and green otherwise.
pub fn badge(version: &semver::Version) -> String {
    let colour = if !version.pre.is_empty() {
        "purple"
    } else if version.major == 0 {
        "orange"
    } else {
        "green"
    };
    let mut buffer = itoa::Buffer::new();
    let major = buffer.format(version.major).to_string();
    format!("version-{major}.{}.{}-{colour}", version.minor, version.patch)
}
