//! The parser: Go's `text/template/parse/parse.go`.
//!
//! A recursive-descent parser with Go's three-token lookahead, producing one [`Tree`] per
//! template (the top level plus every `define` and `block`). Error texts and the line they
//! report follow Go. Unlike Go, nesting depth is bounded (see [`MAX_DEPTH`]) so that hostile input
//! cannot exhaust the stack.

use std::collections::HashMap;
use std::sync::Arc;

use super::node::*;
use super::strconv;
use crate::lex::{Item, ItemType, Lexer};

/// Maximum nesting of parentheses and control structures. Go allows 10000 parentheses (and
/// unbounded control nesting); we stop earlier to stay within a thread's stack.
pub const MAX_DEPTH: usize = 200;

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Tree {
    /// The template's name.
    pub name: String,
    /// The name of the top-level template during parsing, for error locations.
    pub parse_name: Arc<str>,
    /// The top-level list.
    pub root: ListNode,
    /// The full text that was parsed, for error locations.
    pub text: Arc<str>,
}

impl Tree {
    /// Go's `ErrorContext`: `name:line:col` for a byte offset.
    pub fn location(&self, pos: usize) -> String {
        let text = self.text.get(..pos.min(self.text.len())).unwrap_or("");
        let col = match text.rfind('\n') {
            Some(i) => pos - (i + 1),
            None => pos,
        };
        let line = 1 + text.matches('\n').count();
        format!("{}:{}:{}", self.parse_name, line, col)
    }
}

/// A parse error, with Go's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

type PResult<T> = Result<T, ParseError>;

enum Parsed {
    Node(Node),
    End,
    Else(usize),
}

impl Parsed {
    fn describe(&self) -> String {
        match self {
            Parsed::Node(n) => n.to_string(),
            Parsed::End => "{{end}}".into(),
            Parsed::Else(_) => "{{else}}".into(),
        }
    }
}

/// Parser state (one per `Parse` call; `define` bodies reuse it with fresh per-tree state).
struct Parser<'a, 'f> {
    lex: Lexer<'a>,
    token: [Item<'a>; 3],
    peek_count: usize,
    /// Declared variable names in scope (borrowed from the input).
    vars: Vec<std::borrow::Cow<'a, str>>,
    has_func: &'f dyn Fn(&str) -> bool,
    action_line: usize,
    range_depth: usize,
    depth: usize,
    parse_name: Arc<str>,
    text: Arc<str>,
    trees: &'f mut HashMap<String, Tree>,
}

fn empty_item() -> Item<'static> {
    Item {
        typ: ItemType::Eof,
        pos: 0,
        val: std::borrow::Cow::Borrowed(""),
        line: 1,
    }
}

/// Parses `text` as template `name`, adding every tree it defines to `trees`.
/// `has_func` says whether a function name is defined (Go checks at parse time).
pub fn parse(
    name: &str,
    text: &str,
    left: &str,
    right: &str,
    has_func: &dyn Fn(&str) -> bool,
    trees: &mut HashMap<String, Tree>,
) -> Result<(), ParseError> {
    let shared: Arc<str> = Arc::from(text);
    let parse_name: Arc<str> = Arc::from(name);
    let mut lex = Lexer::new(text, left, right);
    lex.options.break_ok = !has_func("break");
    lex.options.continue_ok = !has_func("continue");
    let mut p = Parser {
        lex,
        token: [empty_item(), empty_item(), empty_item()],
        peek_count: 0,
        vars: vec![std::borrow::Cow::Borrowed("$")],
        has_func,
        action_line: 0,
        range_depth: 0,
        depth: 0,
        parse_name: parse_name.clone(),
        text: shared.clone(),
        trees,
    };
    let root = p.parse_top()?;
    let tree = Tree {
        name: name.to_string(),
        parse_name,
        root,
        text: shared,
    };
    p.add(tree)
}

impl<'a> Parser<'a, '_> {
    fn errorf<T>(&self, msg: impl std::fmt::Display) -> PResult<T> {
        Err(ParseError(format!(
            "template: {}:{}: {}",
            self.parse_name, self.token[0].line, msg
        )))
    }

    fn next(&mut self) -> Item<'a> {
        if self.peek_count > 0 {
            self.peek_count -= 1;
        } else {
            self.token[0] = self.lex.next_item();
        }
        self.token[self.peek_count].clone()
    }

    fn backup(&mut self) {
        self.peek_count += 1;
    }

    fn backup2(&mut self, t1: Item<'a>) {
        self.token[1] = t1;
        self.peek_count = 2;
    }

    fn backup3(&mut self, t2: Item<'a>, t1: Item<'a>) {
        self.token[1] = t1;
        self.token[2] = t2;
        self.peek_count = 3;
    }

    fn peek(&mut self) -> Item<'a> {
        if self.peek_count > 0 {
            return self.token[self.peek_count - 1].clone();
        }
        self.peek_count = 1;
        self.token[0] = self.lex.next_item();
        self.token[0].clone()
    }

    fn next_non_space(&mut self) -> Item<'a> {
        loop {
            let t = self.next();
            if t.typ != ItemType::Space {
                return t;
            }
        }
    }

    fn peek_non_space(&mut self) -> Item<'a> {
        let t = self.next_non_space();
        self.backup();
        t
    }

    fn expect(&mut self, expected: ItemType, context: &str) -> PResult<Item<'a>> {
        let t = self.next_non_space();
        if t.typ != expected {
            return self.unexpected(&t, context);
        }
        Ok(t)
    }

    fn unexpected<T>(&self, token: &Item, context: &str) -> PResult<T> {
        if token.typ == ItemType::Error {
            let mut extra = String::new();
            if self.action_line != 0 && self.action_line != token.line {
                extra = format!(" in action started at {}:{}", self.parse_name, self.action_line);
                if token.val.ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return self.errorf(format!("{token}{extra}"));
        }
        self.errorf(format!("unexpected {token} in {context}"))
    }

    fn add(&mut self, tree: Tree) -> PResult<()> {
        let replace = match self.trees.get(&tree.name) {
            None => true,
            Some(old) => old.root.nodes.iter().all(Node::is_empty_tree),
        };
        if replace {
            self.trees.insert(tree.name.clone(), tree);
            return Ok(());
        }
        if !tree.root.nodes.iter().all(Node::is_empty_tree) {
            return self.errorf(format!(
                "template: multiple definition of template {}",
                gocompat::strconv::quote(&tree.name)
            ));
        }
        Ok(())
    }

    fn parse_top(&mut self) -> PResult<ListNode> {
        let mut root = ListNode {
            pos: self.peek().pos,
            nodes: vec![],
        };
        while self.peek().typ != ItemType::Eof {
            if self.peek().typ == ItemType::LeftDelim {
                let delim = self.next();
                if self.next_non_space().typ == ItemType::Define {
                    self.parse_definition()?;
                    continue;
                }
                self.backup2(delim);
            }
            match self.text_or_action()? {
                p @ (Parsed::End | Parsed::Else(_)) => {
                    return self.errorf(format!("unexpected {}", p.describe()));
                }
                Parsed::Node(n) => root.nodes.push(n),
            }
        }
        Ok(root)
    }

    /// Runs `f` with fresh per-tree state (as Go does with a new `Tree` sharing the lexer).
    fn with_new_tree<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        let vars = std::mem::replace(&mut self.vars, vec![std::borrow::Cow::Borrowed("$")]);
        let range_depth = std::mem::replace(&mut self.range_depth, 0);
        let action_line = std::mem::replace(&mut self.action_line, 0);
        let r = f(self);
        self.vars = vars;
        self.range_depth = range_depth;
        self.action_line = action_line;
        r
    }

    fn parse_definition(&mut self) -> PResult<()> {
        self.with_new_tree(|p| {
            let context = "define clause";
            let name = p.next_non_space();
            if name.typ != ItemType::String && name.typ != ItemType::RawString {
                return p.unexpected(&name, context);
            }
            let name = match strconv::unquote(&name.val) {
                Ok(n) => n,
                Err(e) => return p.errorf(e),
            };
            p.expect(ItemType::RightDelim, context)?;
            let (root, end) = p.item_list()?;
            if !matches!(end, Parsed::End) {
                return p.errorf(format!("unexpected {} in {}", end.describe(), context));
            }
            let tree = Tree {
                name,
                parse_name: p.parse_name.clone(),
                root,
                text: p.text.clone(),
            };
            p.add(tree)
        })
    }

    fn item_list(&mut self) -> PResult<(ListNode, Parsed)> {
        let mut list = ListNode {
            pos: self.peek_non_space().pos,
            nodes: vec![],
        };
        while self.peek_non_space().typ != ItemType::Eof {
            match self.text_or_action()? {
                Parsed::Node(n) => list.nodes.push(n),
                end => return Ok((list, end)),
            }
        }
        self.errorf("unexpected EOF")
    }

    fn text_or_action(&mut self) -> PResult<Parsed> {
        let token = self.next_non_space();
        match token.typ {
            ItemType::Text => Ok(Parsed::Node(Node::Text(TextNode {
                pos: token.pos,
                text: token.val.into_owned(),
            }))),
            ItemType::LeftDelim => {
                self.action_line = token.line;
                let r = self.action();
                self.action_line = 0;
                r
            }
            ItemType::Comment => Ok(Parsed::Node(Node::Comment(CommentNode {
                pos: token.pos,
                text: token.val.into_owned(),
            }))),
            _ => self.unexpected(&token, "input"),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        if self.depth >= MAX_DEPTH {
            return self.errorf("max expression depth exceeded");
        }
        self.depth += 1;
        Ok(())
    }

    fn action(&mut self) -> PResult<Parsed> {
        let token = self.next_non_space();
        match token.typ {
            ItemType::Block => return self.block_control(),
            ItemType::Break => return self.break_control(token, "{{break}}", true),
            ItemType::Continue => return self.break_control(token, "{{continue}}", false),
            ItemType::Else => return self.else_control(),
            ItemType::End => {
                let t = self.expect(ItemType::RightDelim, "end")?;
                let _ = t;
                return Ok(Parsed::End);
            }
            ItemType::If | ItemType::Range | ItemType::With => {
                self.enter()?;
                let r = self.branch(token.typ);
                self.depth -= 1;
                return r.map(Parsed::Node);
            }
            ItemType::Template => return self.template_control(),
            _ => {}
        }
        self.backup();
        let token = self.peek();
        let mut pipe = self.pipeline("command", ItemType::RightDelim)?;
        pipe.pos.line = token.line;
        Ok(Parsed::Node(Node::Action(ActionNode {
            pos: Pos {
                offset: token.pos,
                line: token.line,
            },
            pipe,
        })))
    }

    fn break_control(&mut self, tok: Item, ctx: &str, is_break: bool) -> PResult<Parsed> {
        let t = self.next_non_space();
        if t.typ != ItemType::RightDelim {
            return self.unexpected(&t, ctx);
        }
        if self.range_depth == 0 {
            return self.errorf(format!("{ctx} outside {{{{range}}}}"));
        }
        let pos = Pos {
            offset: tok.pos,
            line: tok.line,
        };
        Ok(Parsed::Node(if is_break {
            Node::Break(pos)
        } else {
            Node::Continue(pos)
        }))
    }

    fn pipeline(&mut self, context: &str, end: ItemType) -> PResult<PipeNode> {
        let token = self.peek_non_space();
        let mut pipe = PipeNode {
            pos: Pos {
                offset: token.pos,
                line: token.line,
            },
            is_assign: false,
            decl: vec![],
            cmds: vec![],
        };
        'decls: loop {
            let v = self.peek_non_space();
            if v.typ == ItemType::Variable {
                self.next();
                let token_after_variable = self.peek();
                let next = self.peek_non_space();
                if next.typ == ItemType::Assign || next.typ == ItemType::Declare {
                    pipe.is_assign = next.typ == ItemType::Assign;
                    self.next_non_space();
                    pipe.decl.push(VariableNode {
                        pos: v.pos,
                        ident: vec![v.val.to_string()],
                    });
                    self.vars.push(v.val);
                } else if next.typ == ItemType::Char && next.val == "," {
                    self.next_non_space();
                    pipe.decl.push(VariableNode {
                        pos: v.pos,
                        ident: vec![v.val.to_string()],
                    });
                    self.vars.push(v.val);
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().typ {
                            ItemType::Variable | ItemType::RightDelim | ItemType::RightParen => {
                                continue 'decls;
                            }
                            _ => return self.errorf("range can only initialize variables"),
                        }
                    }
                    return self.errorf(format!("too many declarations in {context}"));
                } else if token_after_variable.typ == ItemType::Space {
                    self.backup3(v, token_after_variable);
                } else {
                    self.backup2(v);
                }
            }
            break;
        }
        loop {
            let token = self.next_non_space();
            match token.typ {
                t if t == end => {
                    self.check_pipeline(&pipe, context)?;
                    return Ok(pipe);
                }
                ItemType::Bool
                | ItemType::CharConstant
                | ItemType::Complex
                | ItemType::Dot
                | ItemType::Field
                | ItemType::Identifier
                | ItemType::Number
                | ItemType::Nil
                | ItemType::RawString
                | ItemType::String
                | ItemType::Variable
                | ItemType::LeftParen => {
                    self.backup();
                    let c = self.command()?;
                    pipe.cmds.push(c);
                }
                _ => return self.unexpected(&token, context),
            }
        }
    }

    fn check_pipeline(&self, pipe: &PipeNode, context: &str) -> PResult<()> {
        if pipe.cmds.is_empty() {
            return self.errorf(format!("missing value for {context}"));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if let Some(Arg::Bool { .. } | Arg::Dot(_) | Arg::Nil(_) | Arg::Number(_) | Arg::String { .. }) =
                c.args.first()
            {
                return self.errorf(format!("non executable command in pipeline stage {}", i + 1));
            }
        }
        Ok(())
    }

    fn branch(&mut self, typ: ItemType) -> PResult<Node> {
        let context = match typ {
            ItemType::If => "if",
            ItemType::Range => "range",
            _ => "with",
        };
        let mark = self.vars.len();
        let r = self.parse_control(context);
        self.vars.truncate(mark);
        let b = r?;
        Ok(match typ {
            ItemType::If => Node::If(b),
            ItemType::Range => Node::Range(b),
            _ => Node::With(b),
        })
    }

    fn parse_control(&mut self, context: &str) -> PResult<BranchNode> {
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let r = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (list, next) = r?;
        let mut else_list = None;
        if let Parsed::Else(else_pos) = next {
            let chained = (context == "if" && self.peek().typ == ItemType::If)
                || (context == "with" && self.peek().typ == ItemType::With);
            if chained {
                let kw = self.next();
                self.enter()?;
                let r = self.branch(kw.typ);
                self.depth -= 1;
                else_list = Some(ListNode {
                    pos: else_pos,
                    nodes: vec![r?],
                });
            } else {
                let (l, next) = self.item_list()?;
                if !matches!(next, Parsed::End) {
                    return self.errorf(format!("expected end; found {}", next.describe()));
                }
                else_list = Some(l);
            }
        }
        Ok(BranchNode {
            pos: pipe.pos,
            pipe,
            list,
            else_list,
        })
    }

    fn else_control(&mut self) -> PResult<Parsed> {
        let peek = self.peek_non_space();
        if peek.typ == ItemType::If || peek.typ == ItemType::With {
            return Ok(Parsed::Else(peek.pos));
        }
        let token = self.expect(ItemType::RightDelim, "else")?;
        Ok(Parsed::Else(token.pos))
    }

    fn block_control(&mut self) -> PResult<Parsed> {
        let context = "block clause";
        let token = self.next_non_space();
        let name = self.parse_template_name(&token, context)?;
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        self.enter()?;
        let r = self.with_new_tree(|p| {
            let (root, end) = p.item_list()?;
            Ok((root, end))
        });
        self.depth -= 1;
        let (root, end) = r?;
        if !matches!(end, Parsed::End) {
            return self.errorf(format!("unexpected {} in {}", end.describe(), context));
        }
        let tree = Tree {
            name: name.clone(),
            parse_name: self.parse_name.clone(),
            root,
            text: self.text.clone(),
        };
        self.add(tree)?;
        Ok(Parsed::Node(Node::Template(TemplateNode {
            pos: Pos {
                offset: token.pos,
                line: token.line,
            },
            name,
            pipe: Some(pipe),
        })))
    }

    fn template_control(&mut self) -> PResult<Parsed> {
        let context = "template clause";
        let token = self.next_non_space();
        let name = self.parse_template_name(&token, context)?;
        let mut pipe = None;
        if self.next_non_space().typ != ItemType::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(context, ItemType::RightDelim)?);
        }
        Ok(Parsed::Node(Node::Template(TemplateNode {
            pos: Pos {
                offset: token.pos,
                line: token.line,
            },
            name,
            pipe,
        })))
    }

    fn parse_template_name(&self, token: &Item, context: &str) -> PResult<String> {
        match token.typ {
            ItemType::String | ItemType::RawString => match strconv::unquote(&token.val) {
                Ok(s) => Ok(s),
                Err(e) => self.errorf(e),
            },
            _ => self.unexpected(token, context),
        }
    }

    fn command(&mut self) -> PResult<CommandNode> {
        let mut cmd = CommandNode {
            pos: self.peek_non_space().pos,
            args: vec![],
        };
        loop {
            self.peek_non_space();
            if let Some(op) = self.operand()? {
                cmd.args.push(op);
            }
            let token = self.next();
            match token.typ {
                ItemType::Space => continue,
                ItemType::RightDelim | ItemType::RightParen => self.backup(),
                ItemType::Pipe => {}
                _ => return self.unexpected(&token, "operand"),
            }
            break;
        }
        if cmd.args.is_empty() {
            return self.errorf("empty command");
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> PResult<Option<Arg>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        if self.peek().typ == ItemType::Field {
            let pos = self.peek().pos;
            let mut fields = vec![];
            while self.peek().typ == ItemType::Field {
                let f = self.next();
                fields.push(f.val.get(1..).unwrap_or("").to_string());
            }
            return Ok(Some(match node {
                Arg::Field { ident, .. } => {
                    let mut ident = ident;
                    ident.extend(fields);
                    Arg::Field { pos, ident }
                }
                Arg::Variable(v) => {
                    let mut ident = v.ident;
                    ident.extend(fields);
                    Arg::Variable(VariableNode { pos, ident })
                }
                Arg::Bool { .. } | Arg::String { .. } | Arg::Number(_) | Arg::Nil(_) | Arg::Dot(_) => {
                    return self.errorf(format!(
                        "unexpected . after term {}",
                        gocompat::strconv::quote(&node.to_string())
                    ));
                }
                other => Arg::Chain {
                    pos,
                    node: Box::new(other),
                    field: fields,
                },
            }));
        }
        Ok(Some(node))
    }

    fn term(&mut self) -> PResult<Option<Arg>> {
        let token = self.next_non_space();
        let pos = token.pos;
        Ok(Some(match token.typ {
            ItemType::Identifier => {
                if !(self.has_func)(&token.val) {
                    return self.errorf(format!(
                        "function {} not defined",
                        gocompat::strconv::quote(&token.val)
                    ));
                }
                Arg::Identifier {
                    pos,
                    name: token.val.into_owned(),
                    func: FuncSlot::default(),
                }
            }
            ItemType::Dot => Arg::Dot(pos),
            ItemType::Nil => Arg::Nil(pos),
            ItemType::Variable => {
                let first = token.val.split('.').next().unwrap_or("");
                if !self.vars.iter().any(|v| v == first) {
                    return self.errorf(format!("undefined variable {}", gocompat::strconv::quote(first)));
                }
                let ident: Vec<String> = token.val.split('.').map(str::to_string).collect();
                Arg::Variable(VariableNode { pos, ident })
            }
            ItemType::Field => Arg::Field {
                pos,
                ident: token.val.split('.').skip(1).map(str::to_string).collect(),
            },
            ItemType::Bool => Arg::Bool {
                pos,
                val: token.val == "true",
            },
            ItemType::CharConstant | ItemType::Complex | ItemType::Number => {
                match super::number::new_number(pos, &token.val, token.typ) {
                    Ok(n) => Arg::Number(Box::new(n)),
                    Err(e) => return self.errorf(e),
                }
            }
            ItemType::LeftParen => {
                self.enter()?;
                let r = self.pipeline("parenthesized pipeline", ItemType::RightParen);
                self.depth -= 1;
                Arg::Pipe(Box::new(r?))
            }
            ItemType::String | ItemType::RawString => match strconv::unquote(&token.val) {
                Ok(s) => Arg::String {
                    pos,
                    quoted: token.val.into_owned(),
                    text: s,
                },
                Err(e) => return self.errorf(e),
            },
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }
}
