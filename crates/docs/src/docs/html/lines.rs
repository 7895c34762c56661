//! An HTML page parsed with the source line where each element starts: html5ever's tree
//! builder, its sink wrapped to note the line it is at when it creates an element.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use ego_tree::NodeId;
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use scraper::{Html, HtmlTreeSink};

/// Parses a page, recording the source line (1-based) where each element starts.
pub(super) fn parse_with_lines(content: &str) -> (Html, HashMap<NodeId, u32>) {
    let sink = LineSink {
        inner: HtmlTreeSink::new(Html::new_document()),
        line: Cell::new(1),
        lines: RefCell::new(HashMap::new()),
    };
    html5ever::driver::parse_document(sink, Default::default()).one(content)
}

struct LineSink {
    inner: HtmlTreeSink,
    line: Cell<u64>,
    lines: RefCell<HashMap<NodeId, u32>>,
}

impl TreeSink for LineSink {
    type Output = (Html, HashMap<NodeId, u32>);
    type Handle = NodeId;
    type ElemName<'a> = <HtmlTreeSink as TreeSink>::ElemName<'a>;

    fn finish(self) -> Self::Output {
        (self.inner.finish(), self.lines.into_inner())
    }
    fn parse_error(&self, _msg: Cow<'static, str>) {}
    fn set_current_line(&self, line: u64) {
        self.line.set(line);
    }
    fn get_document(&self) -> NodeId {
        self.inner.get_document()
    }
    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Self::ElemName<'a> {
        self.inner.elem_name(target)
    }
    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        let id = self.inner.create_element(name, attrs, flags);
        let line = u32::try_from(self.line.get()).unwrap_or(u32::MAX);
        self.lines.borrow_mut().insert(id, line);
        id
    }
    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.inner.create_comment(text)
    }
    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.inner.create_pi(target, data)
    }
    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        self.inner.append(parent, child)
    }
    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        self.inner
            .append_based_on_parent_node(element, prev_element, child)
    }
    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.inner
            .append_doctype_to_document(name, public_id, system_id)
    }
    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.inner.get_template_contents(target)
    }
    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.inner.same_node(x, y)
    }
    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode)
    }
    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        self.inner.append_before_sibling(sibling, new_node)
    }
    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs)
    }
    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target)
    }
    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        self.inner.reparent_children(node, new_parent)
    }
}
