//! The text side of every report: clients that read only a tool result's text content get
//! this short rendering; the structured content carries the whole report.

pub trait Render {
    fn render(&self) -> String;
}
