//! Parse-tree nodes: Go's `text/template/parse/node.go`.
//!
//! Every node keeps its byte position so execution errors can say `t:3:14`, and implements
//! `Display` exactly as Go's `String()` does, because Go quotes the node in error messages
//! (`executing "t" at <.a.b>: ...`).

use std::fmt;
use std::sync::{Arc, OnceLock, Weak};

use crate::funcs::{Func, FuncMap};

/// A node in the template's statement list.
#[derive(Debug, Clone)]
pub enum Node {
    /// Plain text.
    Text(TextNode),
    /// A `{{/* comment */}}` (kept only when comments are requested).
    Comment(CommentNode),
    /// A non-control action such as `{{.x}}`.
    Action(ActionNode),
    /// `{{if}}`.
    If(BranchNode),
    /// `{{range}}`.
    Range(BranchNode),
    /// `{{with}}`.
    With(BranchNode),
    /// `{{template}}` (and the invocation part of `{{block}}`).
    Template(TemplateNode),
    /// `{{break}}`.
    Break(Pos),
    /// `{{continue}}`.
    Continue(Pos),
}

/// A position: byte offset and line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pos {
    /// Byte offset in the template text.
    pub offset: usize,
    /// Line number (1-based).
    pub line: usize,
}

/// A sequence of nodes.
#[derive(Debug, Clone, Default)]
pub struct ListNode {
    /// Byte offset.
    pub pos: usize,
    /// The nodes in order.
    pub nodes: Vec<Node>,
}

/// Plain text.
#[derive(Debug, Clone)]
pub struct TextNode {
    /// Byte offset.
    pub pos: usize,
    /// The text.
    pub text: String,
}

/// A comment.
#[derive(Debug, Clone)]
pub struct CommentNode {
    /// Byte offset.
    pub pos: usize,
    /// The comment text including `/*` and `*/`.
    pub text: String,
}

/// An action to evaluate and print.
#[derive(Debug, Clone)]
pub struct ActionNode {
    /// Position.
    pub pos: Pos,
    /// The pipeline.
    pub pipe: PipeNode,
}

/// `if`, `range` or `with` with their lists.
#[derive(Debug, Clone)]
pub struct BranchNode {
    /// Position (of the pipeline).
    pub pos: Pos,
    /// The pipeline to evaluate.
    pub pipe: PipeNode,
    /// What to execute when true (or per element).
    pub list: ListNode,
    /// What to execute otherwise.
    pub else_list: Option<ListNode>,
}

/// A `{{template "name" pipeline}}` call.
#[derive(Debug, Clone)]
pub struct TemplateNode {
    /// Position.
    pub pos: Pos,
    /// The template name (unquoted).
    pub name: String,
    /// The optional argument.
    pub pipe: Option<PipeNode>,
}

/// A pipeline with optional variable declarations.
#[derive(Debug, Clone)]
pub struct PipeNode {
    /// Position.
    pub pos: Pos,
    /// `=` rather than `:=`.
    pub is_assign: bool,
    /// Declared variables (names including `$`).
    pub decl: Vec<VariableNode>,
    /// The commands, in lexical order.
    pub cmds: Vec<CommandNode>,
}

/// A command: a function or field with arguments.
#[derive(Debug, Clone)]
pub struct CommandNode {
    /// Byte offset.
    pub pos: usize,
    /// The arguments; the first is the function or value.
    pub args: Vec<Arg>,
}

/// A `$x.a.b` variable reference.
#[derive(Debug, Clone)]
pub struct VariableNode {
    /// Byte offset.
    pub pos: usize,
    /// The variable name followed by field names.
    pub ident: Vec<String>,
}

/// A parsed number, stored under every type that can represent it (Go's ideal constants).
#[derive(Debug, Clone, Default)]
pub struct NumberNode {
    /// Byte offset.
    pub pos: usize,
    /// Has an integral value.
    pub is_int: bool,
    /// Has an unsigned integral value.
    pub is_uint: bool,
    /// Has a floating-point value.
    pub is_float: bool,
    /// Is complex.
    pub is_complex: bool,
    /// Signed value.
    pub int64: i64,
    /// Unsigned value.
    pub uint64: u64,
    /// Float value.
    pub float64: f64,
    /// Complex value (real, imaginary).
    pub complex: (f64, f64),
    /// The original text.
    pub text: String,
}

/// Where the executor remembers which function an identifier names, so a call does not look
/// the name up again on every execution.
///
/// Go binds function names when it executes (`findFunction` reads the template's current
/// function map), and a host may change the map after parsing (Go's `Funcs`), so a resolution
/// is valid only for the function map it was made against. The slot keeps a weak reference to
/// that map: the allocation outlives the map's contents, so its address is never reused while
/// the slot holds it, and a pointer comparison tells whether the executing template still uses
/// the same map. Trees shared by templates with different maps fall back to looking up.
#[derive(Clone, Default)]
pub struct FuncSlot(OnceLock<Resolved>);

/// A function found by name, with the map it was found against.
#[derive(Clone)]
pub(crate) struct Resolved {
    /// The template's function map at resolution time.
    funcs: Weak<FuncMap>,
    /// The function (from that map or the built-ins).
    pub(crate) func: Func,
    /// Whether it is a built-in (`and`, `or` and `call` get special treatment).
    pub(crate) is_builtin: bool,
}

impl FuncSlot {
    /// The remembered function if it was resolved against `funcs`.
    pub(crate) fn get(&self, funcs: &Arc<FuncMap>) -> Option<&Resolved> {
        self.0
            .get()
            .filter(|r| std::ptr::eq(r.funcs.as_ptr(), Arc::as_ptr(funcs)))
    }

    /// Remembers a resolution against `funcs`; the first one wins (a slot is shared by every
    /// template that shares the tree, and later ones fall back to looking up).
    pub(crate) fn remember(&self, funcs: &Arc<FuncMap>, func: &Func, is_builtin: bool) {
        let _ = self.0.set(Resolved {
            funcs: Arc::downgrade(funcs),
            func: func.clone(),
            is_builtin,
        });
    }
}

impl fmt::Debug for FuncSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "FuncSlot(resolved)"
        } else {
            "FuncSlot"
        })
    }
}

/// An operand in a command.
#[derive(Debug, Clone)]
pub enum Arg {
    /// A function name.
    Identifier {
        /// Byte offset.
        pos: usize,
        /// The name.
        name: String,
        /// The function the name resolved to, remembered by the executor.
        func: FuncSlot,
    },
    /// `.`
    Dot(usize),
    /// `nil`
    Nil(usize),
    /// `$x.a`
    Variable(VariableNode),
    /// `.a.b`
    Field {
        /// Byte offset.
        pos: usize,
        /// Field names.
        ident: Vec<String>,
    },
    /// `(pipe).a.b` or `fn.a` style chains.
    Chain {
        /// Byte offset.
        pos: usize,
        /// The term the chain starts from.
        node: Box<Arg>,
        /// Field names.
        field: Vec<String>,
    },
    /// `true` / `false`.
    Bool {
        /// Byte offset.
        pos: usize,
        /// The value.
        val: bool,
    },
    /// A number.
    Number(Box<NumberNode>),
    /// A string constant.
    String {
        /// Byte offset.
        pos: usize,
        /// The original text with quotes.
        quoted: String,
        /// The unquoted value.
        text: String,
    },
    /// A parenthesized pipeline.
    Pipe(Box<PipeNode>),
}

impl Arg {
    /// The byte offset of the operand.
    pub fn pos(&self) -> usize {
        match self {
            Arg::Identifier { pos, .. }
            | Arg::Dot(pos)
            | Arg::Nil(pos)
            | Arg::Field { pos, .. }
            | Arg::Chain { pos, .. }
            | Arg::Bool { pos, .. }
            | Arg::String { pos, .. } => *pos,
            Arg::Variable(v) => v.pos,
            Arg::Number(n) => n.pos,
            Arg::Pipe(p) => p.pos.offset,
        }
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Identifier { name, .. } => f.write_str(name),
            Arg::Dot(_) => f.write_str("."),
            Arg::Nil(_) => f.write_str("nil"),
            Arg::Variable(v) => write!(f, "{v}"),
            Arg::Field { ident, .. } => {
                for id in ident {
                    write!(f, ".{id}")?;
                }
                Ok(())
            }
            Arg::Chain { node, field, .. } => {
                if let Arg::Pipe(p) = node.as_ref() {
                    write!(f, "({p})")?;
                } else {
                    write!(f, "{node}")?;
                }
                for id in field {
                    write!(f, ".{id}")?;
                }
                Ok(())
            }
            Arg::Bool { val, .. } => f.write_str(if *val { "true" } else { "false" }),
            Arg::Number(n) => f.write_str(&n.text),
            Arg::String { quoted, .. } => f.write_str(quoted),
            Arg::Pipe(p) => write!(f, "{p}"),
        }
    }
}

impl fmt::Display for VariableNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.ident.join("."))
    }
}

impl fmt::Display for CommandNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            if let Arg::Pipe(p) = arg {
                write!(f, "({p})")?;
            } else {
                write!(f, "{arg}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for PipeNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            for (i, v) in self.decl.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{v}")?;
            }
            f.write_str(if self.is_assign { " = " } else { " := " })?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ListNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for n in &self.nodes {
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

fn write_branch(f: &mut fmt::Formatter<'_>, name: &str, b: &BranchNode) -> fmt::Result {
    write!(f, "{{{{{name} {}}}}}{}", b.pipe, b.list)?;
    if let Some(e) = &b.else_list {
        write!(f, "{{{{else}}}}{e}")?;
    }
    f.write_str("{{end}}")
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Text(t) => f.write_str(&t.text),
            Node::Comment(c) => write!(f, "{{{{{}}}}}", c.text),
            Node::Action(a) => write!(f, "{{{{{}}}}}", a.pipe),
            Node::If(b) => write_branch(f, "if", b),
            Node::Range(b) => write_branch(f, "range", b),
            Node::With(b) => write_branch(f, "with", b),
            Node::Template(t) => {
                write!(f, "{{{{template {}", gocompat::strconv::quote(&t.name))?;
                if let Some(p) = &t.pipe {
                    write!(f, " {p}")?;
                }
                f.write_str("}}")
            }
            Node::Break(_) => f.write_str("{{break}}"),
            Node::Continue(_) => f.write_str("{{continue}}"),
        }
    }
}

impl Node {
    /// Whether the node is "empty" in Go's sense (`parse.IsEmptyTree`): only whitespace text
    /// and comments.
    pub fn is_empty_tree(&self) -> bool {
        match self {
            Node::Comment(_) => true,
            Node::Text(t) => t.text.trim_matches(is_go_space).is_empty(),
            _ => false,
        }
    }
}

/// `bytes.TrimSpace`'s notion of space (Unicode white space).
fn is_go_space(c: char) -> bool {
    c.is_whitespace()
}

/// Whether a function for which `called` is true is called anywhere in `nodes`: in actions,
/// branch pipelines and bodies, template calls' arguments, nested pipelines and chains.
pub(crate) fn calls_any(nodes: &[Node], called: &dyn Fn(&str) -> bool) -> bool {
    fn in_pipe(pipe: &PipeNode, called: &dyn Fn(&str) -> bool) -> bool {
        pipe.cmds
            .iter()
            .flat_map(|cmd| &cmd.args)
            .any(|arg| in_arg(arg, called))
    }
    fn in_arg(arg: &Arg, called: &dyn Fn(&str) -> bool) -> bool {
        match arg {
            Arg::Identifier { name, .. } => called(name),
            Arg::Pipe(pipe) => in_pipe(pipe, called),
            Arg::Chain { node, .. } => in_arg(node, called),
            _ => false,
        }
    }
    nodes.iter().any(|node| match node {
        Node::Action(action) => in_pipe(&action.pipe, called),
        Node::If(branch) | Node::Range(branch) | Node::With(branch) => {
            in_pipe(&branch.pipe, called)
                || calls_any(&branch.list.nodes, called)
                || branch
                    .else_list
                    .as_ref()
                    .is_some_and(|list| calls_any(&list.nodes, called))
        }
        Node::Template(template) => template.pipe.as_ref().is_some_and(|pipe| in_pipe(pipe, called)),
        Node::Text(_) | Node::Comment(_) | Node::Break(_) | Node::Continue(_) => false,
    })
}
