//! Execution: Go's `text/template/exec.go`, a walker over the parse tree.
//!
//! The structure mirrors Go function for function (`walk`, `walkIfOrWith`, `walkRange`,
//! `evalPipeline`, `evalCommand`, `evalField`, `evalCall`, `evalArg`, `validateType`, ...), so
//! the order in which Go checks things, and therefore which error wins, is the same. Go panics
//! to unwind; we return [`Flow`] through `Result`, which also carries `break` and `continue`.

use crate::funcs::{ArgType, Func, builtins};
use crate::parse::{
    Arg, BranchNode, CommandNode, Node, NumberNode, PipeNode, TemplateNode, Tree, VariableNode,
};
use crate::template::{ExecError, ExecErrorKind, ExecOptions, Template};
use crate::value::{ElemType, ObjectKind, Value};
use crate::watch::Watch;

/// Why a walk stopped early.
pub(crate) enum Flow {
    Break,
    Continue,
    Error(Box<ExecError>),
}

type R<T> = Result<T, Flow>;

/// The node execution is "at", for error messages.
#[derive(Clone, Copy)]
enum At<'t> {
    None,
    Node(&'t Node),
    Pipe(&'t PipeNode),
    Cmd(&'t CommandNode),
    Arg(&'t Arg),
    Var(&'t VariableNode),
}

impl At<'_> {
    fn pos_and_context(&self) -> Option<(usize, String)> {
        Some(match self {
            At::None => return None,
            At::Node(n) => (node_pos(n), n.to_string()),
            At::Pipe(p) => (p.pos.offset, p.to_string()),
            At::Cmd(c) => (c.pos, c.to_string()),
            At::Arg(a) => (a.pos(), a.to_string()),
            At::Var(v) => (v.pos, v.to_string()),
        })
    }
}

fn node_pos(n: &Node) -> usize {
    match n {
        Node::Text(t) => t.pos,
        Node::Comment(c) => c.pos,
        Node::Action(a) => a.pos.offset,
        Node::If(b) | Node::Range(b) | Node::With(b) => b.pos.offset,
        Node::Template(t) => t.pos.offset,
        Node::Break(p) | Node::Continue(p) => p.offset,
    }
}

/// Execution state for one template invocation (Go's `state`).
pub(crate) struct State<'t, 'o> {
    tmpl: &'t Template,
    tree: &'t Tree,
    out: &'o mut String,
    node: At<'t>,
    vars: Vec<(&'t str, Value, bool)>,
    /// Scratch stack for call arguments: a call pushes its evaluated arguments here and passes
    /// the slice to the function, then truncates back, so calls allocate no argument `Vec`.
    args: Vec<Value>,
    /// Whether dot's static Go type is `interface {}` (an element of a `[]interface{}` or a
    /// `map[string]interface{}`), which Go names in field errors.
    dot_iface: bool,
    depth: usize,
    /// Range iterations and template calls so far ([`Template::max_steps`]).
    steps: u64,
    /// Told of every call and of every value printed that is not a string.
    watch: Option<&'o dyn Watch>,
    /// When the execution stops ([`ExecOptions::deadline`]).
    deadline: Option<std::time::Instant>,
}

/// How many steps pass between two looks at the clock: a step is at least a few hundred
/// nanoseconds of work, a look about twenty.
const STEPS_PER_DEADLINE_CHECK: u64 = 16;

/// Maximum nesting during execution: `{{template}}` calls plus the `if`/`with`/`range` bodies
/// entered on the way. Go limits only template calls, at 100000; we stop much earlier, and
/// count control structures too, because each level uses native stack.
pub const MAX_EXEC_DEPTH: usize = 1000;

impl<'t, 'o> State<'t, 'o> {
    pub(crate) fn new(
        tmpl: &'t Template,
        tree: &'t Tree,
        out: &'o mut String,
        dot: Value,
        options: ExecOptions<'o>,
    ) -> Self {
        State {
            tmpl,
            tree,
            out,
            node: At::None,
            vars: vec![("$", dot.unwrap_interface(), false)],
            args: Vec::with_capacity(16),
            dot_iface: false,
            depth: 0,
            steps: 0,
            watch: options.watch,
            deadline: options.deadline,
        }
    }

    fn errorf<T>(&self, msg: impl std::fmt::Display) -> R<T> {
        self.stop(ExecErrorKind::Template, msg)
    }

    /// An error of `kind`, located at the current node as Go locates its errors.
    fn stop<T>(&self, kind: ExecErrorKind, msg: impl std::fmt::Display) -> R<T> {
        let name = &self.tree.name;
        let message = match self.node.pos_and_context() {
            None => format!("template: {name}: {msg}"),
            Some((pos, ctx)) => format!(
                "template: {}: executing {} at <{}>: {}",
                self.tree.location(pos),
                gocompat::strconv::quote(name),
                ctx,
                msg
            ),
        };
        Err(Flow::Error(Box::new(ExecError {
            name: name.clone(),
            message,
            kind,
        })))
    }

    fn at(&mut self, n: At<'t>) {
        self.node = n;
    }

    fn mark(&self) -> usize {
        self.vars.len()
    }

    fn pop(&mut self, mark: usize) {
        self.vars.truncate(mark);
    }

    fn set_var(&mut self, name: &str, v: Value, iface: bool) -> R<()> {
        for (n, val, i) in self.vars.iter_mut().rev() {
            if *n == name {
                *val = v;
                *i = iface;
                return Ok(());
            }
        }
        self.errorf(format!("undefined variable: {name}"))
    }

    fn set_top_var(&mut self, n: usize, v: Value, iface: bool) {
        let len = self.vars.len();
        if let Some(slot) = len.checked_sub(n).and_then(|i| self.vars.get_mut(i)) {
            slot.1 = v;
            slot.2 = iface;
        }
    }

    fn var_value(&self, name: &str) -> R<(Value, bool)> {
        for (n, val, iface) in self.vars.iter().rev() {
            if *n == name {
                return Ok((val.clone(), *iface));
            }
        }
        self.errorf(format!("undefined variable: {name}"))
    }

    /// Counts a step, and stops the execution past its step budget or (every few steps) its
    /// deadline.
    fn tick(&mut self) -> R<()> {
        self.steps += 1;
        if let Some(max) = self.tmpl.max_steps
            && self.steps > max
        {
            return self.stop(
                ExecErrorKind::StepBudget,
                format!("execution step budget exceeded ({max} steps)"),
            );
        }
        if self.steps.is_multiple_of(STEPS_PER_DEADLINE_CHECK) {
            self.check_deadline()?;
        }
        Ok(())
    }

    /// Stops the execution when its deadline has passed.
    pub(crate) fn check_deadline(&self) -> R<()> {
        match self.deadline {
            Some(deadline) if std::time::Instant::now() >= deadline => self.stop(
                ExecErrorKind::Deadline,
                format!("execution stopped at its deadline after {} steps", self.steps),
            ),
            _ => Ok(()),
        }
    }

    /// Walks a list of nodes.
    pub(crate) fn walk_list(&mut self, dot: &Value, nodes: &'t [Node]) -> R<()> {
        for n in nodes {
            self.walk(dot, n)?;
        }
        Ok(())
    }

    fn walk(&mut self, dot: &Value, node: &'t Node) -> R<()> {
        self.at(At::Node(node));
        match node {
            Node::Action(a) => {
                let val = self.eval_pipeline(dot, &a.pipe)?;
                if a.pipe.decl.is_empty() {
                    self.print_value(node, &val);
                }
                Ok(())
            }
            Node::Break(_) => Err(Flow::Break),
            Node::Continue(_) => Err(Flow::Continue),
            Node::Comment(_) => Ok(()),
            Node::If(b) => self.walk_if_or_with(false, dot, b),
            Node::With(b) => self.walk_if_or_with(true, dot, b),
            Node::Range(b) => self.walk_range(dot, node, b),
            Node::Template(t) => self.walk_template(dot, node, t),
            Node::Text(t) => {
                self.out.push_str(&t.text);
                Ok(())
            }
        }
    }

    fn enter(&mut self) -> R<()> {
        if self.depth >= MAX_EXEC_DEPTH {
            return self.errorf(format!("exceeded maximum template depth ({MAX_EXEC_DEPTH})"));
        }
        self.depth += 1;
        Ok(())
    }

    fn walk_if_or_with(&mut self, with: bool, dot: &Value, b: &'t BranchNode) -> R<()> {
        self.enter()?;
        let r = self.walk_if_or_with_inner(with, dot, b);
        self.depth -= 1;
        r
    }

    fn walk_if_or_with_inner(&mut self, with: bool, dot: &Value, b: &'t BranchNode) -> R<()> {
        let mark = self.mark();
        let r = (|| {
            let val = self.eval_pipeline(dot, &b.pipe)?;
            if val.truth() {
                if with {
                    let saved = std::mem::replace(&mut self.dot_iface, false);
                    let r = self.walk_list(&val, &b.list.nodes);
                    self.dot_iface = saved;
                    r
                } else {
                    self.walk_list(dot, &b.list.nodes)
                }
            } else if let Some(e) = &b.else_list {
                self.walk_list(dot, &e.nodes)
            } else {
                Ok(())
            }
        })();
        self.pop(mark);
        r
    }

    fn walk_range(&mut self, dot: &Value, node: &'t Node, r: &'t BranchNode) -> R<()> {
        self.at(At::Node(node));
        self.enter()?;
        let outer = self.mark();
        let res = self.walk_range_inner(dot, r);
        self.pop(outer);
        self.depth -= 1;
        match res {
            Err(Flow::Break) => Ok(()),
            other => other,
        }
    }

    fn one_iteration(
        &mut self,
        r: &'t BranchNode,
        mark: usize,
        index: Value,
        elem: Value,
        iface: bool,
    ) -> R<()> {
        // A stop is told at the range's pipeline (the whole range would be its text).
        self.at(At::Pipe(&r.pipe));
        self.tick()?;
        let decl = &r.pipe.decl;
        if !decl.is_empty() {
            if r.pipe.is_assign {
                let first = decl.first().and_then(|d| d.ident.first());
                if let Some(name) = first {
                    if decl.len() > 1 {
                        self.set_var(name, index.clone(), false)?;
                    } else {
                        self.set_var(name, elem.clone(), iface)?;
                    }
                }
            } else {
                self.set_top_var(1, elem.clone(), iface);
            }
        }
        if decl.len() > 1 {
            if r.pipe.is_assign {
                if let Some(name) = decl.get(1).and_then(|d| d.ident.first()) {
                    self.set_var(name, elem.clone(), iface)?;
                }
            } else {
                self.set_top_var(2, index, false);
            }
        }
        let saved = std::mem::replace(&mut self.dot_iface, iface);
        let res = self.walk_list(&elem, &r.list.nodes);
        self.dot_iface = saved;
        self.pop(mark);
        match res {
            Err(Flow::Continue) => Ok(()),
            other => other,
        }
    }

    fn walk_range_inner(&mut self, dot: &Value, r: &'t BranchNode) -> R<()> {
        let val = self.eval_pipeline(dot, &r.pipe)?;
        let mark = self.mark();
        match &val {
            Value::Int(..) | Value::Uint(..) if r.pipe.decl.len() > 1 => {
                return self.errorf(format!(
                    "can't use {} to iterate over more than one variable",
                    crate::fmt::sprint_value(&val)
                ));
            }
            Value::Int(n, t) => {
                if *n > 0 {
                    for i in 0..*n {
                        self.one_iteration(r, mark, Value::Missing, Value::Int(i, *t), false)?;
                    }
                    return Ok(());
                }
            }
            Value::Uint(n, t) => {
                if *n > 0 {
                    for i in 0..*n {
                        self.one_iteration(r, mark, Value::Missing, Value::Uint(i, *t), false)?;
                    }
                    return Ok(());
                }
            }
            Value::List(l) => {
                if !l.items.is_empty() {
                    for (i, e) in l.items.iter().enumerate() {
                        self.one_iteration(
                            r,
                            mark,
                            Value::int(i as i64),
                            e.clone(),
                            l.elem == ElemType::Any,
                        )?;
                    }
                    return Ok(());
                }
            }
            Value::Map(m) => {
                let pairs = m.pairs();
                if !pairs.is_empty() {
                    for (k, e) in pairs {
                        self.one_iteration(r, mark, Value::str(k), e, m.elem == ElemType::Any)?;
                    }
                    return Ok(());
                }
            }
            Value::Missing | Value::Nil => {}
            v => {
                return self.errorf(format!(
                    "range can't iterate over {}",
                    crate::fmt::sprint_value(v)
                ));
            }
        }
        if let Some(e) = &r.else_list {
            self.walk_list(dot, &e.nodes)?;
        }
        Ok(())
    }

    fn walk_template(&mut self, dot: &Value, node: &'t Node, t: &'t TemplateNode) -> R<()> {
        self.at(At::Node(node));
        let Some(tree) = self.tmpl.trees.get(&t.name) else {
            return self.errorf(format!(
                "template {} not defined",
                gocompat::strconv::quote(&t.name)
            ));
        };
        if self.depth >= MAX_EXEC_DEPTH {
            return self.errorf(format!("exceeded maximum template depth ({MAX_EXEC_DEPTH})"));
        }
        self.tick()?;
        let new_dot = match &t.pipe {
            Some(p) => self.eval_pipeline(dot, p)?,
            None => Value::Missing,
        };
        let mut st = State {
            tmpl: self.tmpl,
            tree,
            out: &mut *self.out,
            node: At::None,
            vars: vec![("$", new_dot.clone(), false)],
            args: std::mem::take(&mut self.args),
            dot_iface: false,
            depth: self.depth + 1,
            steps: self.steps,
            watch: self.watch,
            deadline: self.deadline,
        };
        let r = st.walk_list(&new_dot, &tree.root.nodes);
        self.steps = st.steps;
        self.args = std::mem::take(&mut st.args);
        r
    }

    fn eval_pipeline(&mut self, dot: &Value, pipe: &'t PipeNode) -> R<Value> {
        if let Some(value) = self.append_in_place(dot, pipe)? {
            return Ok(value);
        }
        self.at(At::Pipe(pipe));
        // The first command gets no piped value; each later one gets the previous result.
        let mut cmds = pipe.cmds.iter();
        let mut value = match cmds.next() {
            Some(cmd) => self.eval_command(dot, cmd, None)?.unwrap_interface(),
            None => Value::Missing,
        };
        for cmd in cmds {
            value = self.eval_command(dot, cmd, Some(value))?.unwrap_interface();
        }
        for var in &pipe.decl {
            let Some(name) = var.ident.first() else {
                continue;
            };
            if pipe.is_assign {
                self.set_var(name, value.clone(), false)?;
            } else {
                self.vars.push((name.as_str(), value.clone(), false));
            }
        }
        Ok(value)
    }

    /// `{{ $l = append $l x }}` (or `push`, `mustAppend`, `mustPush`) where `$l` holds a list:
    /// `x`'s value is pushed onto the list in place when nothing else holds the list, and onto a
    /// copy otherwise, and the pipeline's value is the list. sprig copies the list on every call,
    /// so a loop that builds a list this way (Istio's templates collect the containers' names
    /// so) is quadratic in the list's length in Go; here it is linear. Nothing else differs: the
    /// value is the call's (`[]interface{}` of the items then `x`), `x` is evaluated as the call
    /// evaluates it, and a watch is told of the call. `x` must be a field, a variable, dot or a
    /// constant, whose evaluation cannot change `$l`. `None` when the pipeline is not of that
    /// form; it then runs as any other.
    fn append_in_place(&mut self, dot: &Value, pipe: &'t PipeNode) -> R<Option<Value>> {
        let ([decl], [cmd]) = (pipe.decl.as_slice(), pipe.cmds.as_slice()) else {
            return Ok(None);
        };
        let ([name], true) = (decl.ident.as_slice(), pipe.is_assign) else {
            return Ok(None);
        };
        let [
            ident @ Arg::Identifier { name: func_name, .. },
            Arg::Variable(list_var),
            item,
        ] = cmd.args.as_slice()
        else {
            return Ok(None);
        };
        let pure = matches!(
            item,
            Arg::Field { .. }
                | Arg::Variable(_)
                | Arg::Dot(_)
                | Arg::String { .. }
                | Arg::Number(_)
                | Arg::Bool { .. }
        );
        if !pure || list_var.ident.as_slice() != [name.as_str()] {
            return Ok(None);
        }
        let Some(func) = self.function(ident, func_name) else {
            return Ok(None);
        };
        let Some(slot) = self.vars.iter().rposition(|(n, _, _)| *n == name.as_str()) else {
            return Ok(None);
        };
        if !func.appends || !matches!(self.vars[slot].1, Value::List(_)) {
            return Ok(None);
        }
        self.at(At::Pipe(pipe));
        let value = self.eval_arg(dot, func.params.get(1).copied(), item)?;
        if let Some(watch) = self.watch {
            watch.call(func_name, &[self.vars[slot].1.clone(), value.clone()]);
        }
        let (_, held, iface) = &mut self.vars[slot];
        let Value::List(list) = held else {
            return Ok(None);
        };
        let list = std::sync::Arc::make_mut(list);
        list.elem = ElemType::Any;
        list.items.push(value);
        *iface = false;
        Ok(Some(held.clone()))
    }

    /// The function `name` (the identifier `ident`) resolves to.
    fn function(&self, ident: &'t Arg, name: &str) -> Option<&'t Func> {
        if let Arg::Identifier { func: slot, .. } = ident
            && let Some(r) = slot.get(&self.tmpl.funcs)
        {
            return Some(&r.func);
        }
        let tmpl: &'t Template = self.tmpl;
        tmpl.funcs.get(name).or_else(|| builtins().get(name))
    }

    fn not_a_function(&self, args: &'t [Arg], final_: &Option<Value>) -> R<()> {
        if args.len() > 1 || final_.is_some() {
            let first = args.first().map(ToString::to_string).unwrap_or_default();
            return self.errorf(format!("can't give argument to non-function {first}"));
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &Value, cmd: &'t CommandNode, final_: Option<Value>) -> R<Value> {
        let Some(first) = cmd.args.first() else {
            return self.errorf("empty command");
        };
        match first {
            Arg::Field { ident, .. } => {
                self.at(At::Arg(first));
                return self.eval_field_chain(
                    dot,
                    dot,
                    self.dot_iface,
                    At::Arg(first),
                    ident,
                    Some(&cmd.args),
                    final_,
                );
            }
            Arg::Chain { .. } => return self.eval_chain_node(dot, first, Some(&cmd.args), final_),
            Arg::Identifier { name, .. } => {
                return self.eval_function(dot, first, name, At::Cmd(cmd), Some(&cmd.args), final_);
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, &final_)?;
                return self.eval_pipeline(dot, p);
            }
            Arg::Variable(v) => return self.eval_variable_node(dot, v, Some(&cmd.args), final_),
            _ => {}
        }
        self.at(At::Arg(first));
        self.not_a_function(&cmd.args, &final_)?;
        match first {
            Arg::Bool { val, .. } => Ok(Value::Bool(*val)),
            Arg::Dot(_) => Ok(dot.clone()),
            Arg::Nil(_) => self.errorf("nil is not a command"),
            Arg::Number(n) => self.ideal_constant(first, n),
            Arg::String { text, .. } => Ok(Value::str(text.as_str())),
            _ => self.errorf(format!(
                "can't evaluate command {}",
                gocompat::strconv::quote(&first.to_string())
            )),
        }
    }

    fn ideal_constant(&mut self, arg: &'t Arg, n: &NumberNode) -> R<Value> {
        self.at(At::Arg(arg));
        let t = &n.text;
        let is_hex_int = t.len() > 2
            && t.starts_with('0')
            && (t.as_bytes().get(1) == Some(&b'x') || t.as_bytes().get(1) == Some(&b'X'))
            && !t.contains(['p', 'P']);
        let is_rune = t.starts_with('\'');
        if n.is_complex {
            return Ok(Value::Complex(n.complex.0, n.complex.1));
        }
        if n.is_float && !is_hex_int && !is_rune && t.contains(['.', 'e', 'E', 'p', 'P']) {
            return Ok(Value::Float(n.float64));
        }
        if n.is_int {
            return Ok(Value::int(n.int64));
        }
        if n.is_uint {
            return self.errorf(format!("{t} overflows int"));
        }
        Ok(Value::Missing)
    }

    fn eval_chain_node(
        &mut self,
        dot: &Value,
        chain: &'t Arg,
        args: Option<&'t [Arg]>,
        final_: Option<Value>,
    ) -> R<Value> {
        self.at(At::Arg(chain));
        let Arg::Chain { node, field, .. } = chain else {
            return self.errorf("internal error: not a chain");
        };
        if field.is_empty() {
            return self.errorf("internal error: no fields in evalChainNode");
        }
        if let Arg::Nil(_) = node.as_ref() {
            return self.errorf(format!("indirection through explicit nil in {chain}"));
        }
        let pipe = self.eval_arg(dot, None, node)?;
        self.eval_field_chain(dot, &pipe, false, At::Arg(chain), field, args, final_)
    }

    fn eval_variable_node(
        &mut self,
        dot: &Value,
        v: &'t VariableNode,
        args: Option<&'t [Arg]>,
        final_: Option<Value>,
    ) -> R<Value> {
        self.at(At::Var(v));
        let name = v.ident.first().map(String::as_str).unwrap_or("$");
        let (value, iface) = self.var_value(name)?;
        if v.ident.len() == 1 {
            if let Some(a) = args {
                self.not_a_function(a, &final_)?;
            } else if final_.is_some() {
                return self.errorf(format!("can't give argument to non-function {v}"));
            }
            return Ok(value);
        }
        self.eval_field_chain(dot, &value, iface, At::Var(v), &v.ident[1..], args, final_)
    }

    /// Evaluates `.a.b.c` on `receiver`. The receiver is borrowed (dot needs no clone); only
    /// the intermediate values are owned.
    #[allow(clippy::too_many_arguments)]
    fn eval_field_chain(
        &mut self,
        dot: &Value,
        receiver: &Value,
        mut iface: bool,
        node: At<'t>,
        ident: &'t [String],
        args: Option<&'t [Arg]>,
        final_: Option<Value>,
    ) -> R<Value> {
        let Some((last, init)) = ident.split_last() else {
            return Ok(receiver.clone());
        };
        let mut owned: Option<Value> = None;
        for name in init {
            let r = owned.as_ref().unwrap_or(receiver);
            let next_iface = matches!(r, Value::Map(m) if m.elem == ElemType::Any);
            let v = self.eval_field(dot, name, node, None, None, r, iface)?;
            owned = Some(v);
            iface = next_iface;
        }
        let r = owned.as_ref().unwrap_or(receiver);
        self.eval_field(dot, last, node, args, final_, r, iface)
    }

    fn eval_function(
        &mut self,
        dot: &Value,
        ident: &'t Arg,
        name: &str,
        node: At<'t>,
        args: Option<&'t [Arg]>,
        final_: Option<Value>,
    ) -> R<Value> {
        self.at(At::Arg(ident));
        let slot = match ident {
            Arg::Identifier { func, .. } => Some(func),
            _ => None,
        };
        if let Some(r) = slot.and_then(|s| s.get(&self.tmpl.funcs)) {
            return self.eval_call(dot, &r.func, r.is_builtin, node, name, args, final_);
        }
        let (f, is_builtin) = match self.tmpl.funcs.get(name) {
            Some(f) => (f, false),
            None => match builtins().get(name) {
                Some(f) => (f, true),
                None => {
                    return self.errorf(format!(
                        "{} is not a defined function",
                        gocompat::strconv::quote(name)
                    ));
                }
            },
        };
        if let Some(s) = slot {
            s.remember(&self.tmpl.funcs, f, is_builtin);
        }
        self.eval_call(dot, f, is_builtin, node, name, args, final_)
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_field(
        &mut self,
        dot: &Value,
        field: &str,
        node: At<'t>,
        args: Option<&'t [Arg]>,
        final_: Option<Value>,
        receiver: &Value,
        iface: bool,
    ) -> R<Value> {
        let has_args = args.is_some_and(|a| a.len() > 1) || final_.is_some();
        match receiver {
            Value::Missing => Ok(Value::Missing),
            Value::Nil => self.errorf(format!("nil pointer evaluating interface {{}}.{field}")),
            Value::Object(o) => {
                if let Some(arity) = o.method_arity(field) {
                    // Methods take `interface{}` parameters; a slice of a constant array avoids
                    // allocating a signature per call.
                    const ANY: [ArgType; 8] = [ArgType::Any; 8];
                    let many;
                    let params: &[ArgType] = match ANY.get(..arity) {
                        Some(p) => p,
                        None => {
                            many = vec![ArgType::Any; arity];
                            &many
                        }
                    };
                    let base = self.args.len();
                    let r = self.eval_call_args(dot, params, None, field, args, final_);
                    let r = r.map(|()| {
                        let argv = self.args.get(base..).unwrap_or(&[]);
                        if let Some(watch) = self.watch {
                            watch.method(receiver, field, argv);
                        }
                        o.call_method(field, argv)
                    });
                    self.args.truncate(base);
                    return match r? {
                        Ok(v) => Ok(v),
                        Err(e) => {
                            self.at(node);
                            self.errorf(format!("error calling {field}: {e}"))
                        }
                    };
                }
                // The type name is needed only for errors: look it up lazily.
                let tname = || o.type_name();
                match o.kind() {
                    ObjectKind::Struct => {
                        if let Some(v) = o.field(field) {
                            if has_args {
                                return self.errorf(format!(
                                    "{field} has arguments but cannot be invoked as function"
                                ));
                            }
                            return Ok(v);
                        }
                    }
                    ObjectKind::Pointer => {
                        if o.has_field(field) {
                            if o.is_nil() {
                                return self.errorf(format!("nil pointer evaluating {}.{field}", tname()));
                            }
                            if let Some(v) = o.field(field) {
                                if has_args {
                                    return self.errorf(format!(
                                        "{field} has arguments but cannot be invoked as function"
                                    ));
                                }
                                return Ok(v);
                            }
                        }
                    }
                }
                self.errorf(format!("can't evaluate field {field} in type {}", tname()))
            }
            Value::Map(m) => {
                if has_args {
                    return self.errorf(format!("{field} is not a method but has arguments"));
                }
                Ok(m.get(field).unwrap_or(Value::Missing))
            }
            v => {
                let t = if iface {
                    "interface {}".into()
                } else {
                    v.type_name()
                };
                self.errorf(format!("can't evaluate field {field} in type {t}"))
            }
        }
    }

    /// Checks the argument count and evaluates the arguments of a call (Go's `evalCall`
    /// up to `safeCall`) for a function with fixed parameter types `params` and, if variadic,
    /// the element type `variadic`. The arguments are pushed onto the scratch stack
    /// (`self.args`); the caller notes its length before and truncates back after the call,
    /// on success and on error.
    fn eval_call_args(
        &mut self,
        dot: &Value,
        params: &[ArgType],
        variadic: Option<ArgType>,
        name: &str,
        args: Option<&'t [Arg]>,
        final_: Option<Value>,
    ) -> R<()> {
        let args: &'t [Arg] = match args {
            Some(a) if !a.is_empty() => &a[1..],
            _ => &[],
        };
        let mut num_in = args.len();
        if final_.is_some() {
            num_in += 1;
        }
        let num_fixed = if variadic.is_some() {
            if num_in < params.len() {
                return self.errorf(format!(
                    "wrong number of args for {name}: want at least {} got {}",
                    params.len(),
                    args.len()
                ));
            }
            params.len()
        } else {
            if num_in != params.len() {
                return self.errorf(format!(
                    "wrong number of args for {name}: want {} got {}",
                    params.len(),
                    num_in
                ));
            }
            args.len()
        };
        let mut i = 0;
        while i < num_fixed && i < args.len() {
            let v = self.eval_arg(dot, params.get(i).copied(), &args[i])?;
            self.args.push(v);
            i += 1;
        }
        if let Some(rest) = variadic {
            while i < args.len() {
                let v = self.eval_arg(dot, Some(rest), &args[i])?;
                self.args.push(v);
                i += 1;
            }
        }
        if let Some(fv) = final_ {
            let t = if variadic.is_some() {
                if num_in - 1 < num_fixed {
                    params.get(num_in - 1).copied()
                } else {
                    variadic
                }
            } else {
                params.last().copied()
            };
            let v = self.validate_type(fv, t)?;
            self.args.push(v);
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_call(
        &mut self,
        dot: &Value,
        f: &Func,
        is_builtin: bool,
        node: At<'t>,
        name: &str,
        args: Option<&'t [Arg]>,
        final_: Option<Value>,
    ) -> R<Value> {
        if is_builtin && (name == "and" || name == "or") {
            let rest: &'t [Arg] = match args {
                Some(a) if !a.is_empty() => &a[1..],
                _ => &[],
            };
            let num_in = rest.len() + usize::from(final_.is_some());
            if num_in < 1 {
                return self.errorf(format!(
                    "wrong number of args for {name}: want at least 1 got {}",
                    rest.len()
                ));
            }
            let mut v = Value::Missing;
            for a in rest {
                v = self.eval_arg(dot, Some(ArgType::Reflect), a)?;
                if v.truth() == (name == "or") {
                    return Ok(v);
                }
            }
            if let Some(fv) = final_ {
                v = self.validate_type(fv, Some(ArgType::Reflect))?;
            }
            return Ok(v);
        }
        // Go's `call` names its callee in errors: the first argument's text, or the piped value.
        let callee = if is_builtin && name == "call" {
            match args.and_then(|a| a.get(1)) {
                Some(a) => Some(a.to_string()),
                None => final_.as_ref().map(reflect_string),
            }
        } else {
            None
        };
        let base = self.args.len();
        let r = self.eval_call_args(dot, &f.params, f.variadic, name, args, final_);
        let argv = self.args.get(base..).unwrap_or(&[]);
        let r = r.map(|()| match callee {
            Some(callee) => Err(match argv.first() {
                None | Some(Value::Missing | Value::Nil) => "call of nil".to_string(),
                Some(v) => format!("non-function {callee} of type {}", v.type_name()),
            }),
            None => {
                if let Some(watch) = self.watch {
                    watch.call(name, argv);
                }
                (f.body)(argv)
            }
        });
        self.args.truncate(base);
        match r? {
            Ok(v) => Ok(v),
            Err(e) => {
                self.at(node);
                self.errorf(format!("error calling {name}: {e}"))
            }
        }
    }

    fn validate_type(&mut self, value: Value, typ: Option<ArgType>) -> R<Value> {
        let Some(typ) = typ else {
            return Ok(value);
        };
        if let Value::Missing = value {
            if typ.can_be_nil() {
                return Ok(typ.zero());
            }
            return self.errorf(format!("invalid value; expected {}", typ.go_name()));
        }
        match typ {
            ArgType::Reflect | ArgType::Any => Ok(value),
            _ => {
                if has_go_type(&value, typ) {
                    Ok(value)
                } else {
                    self.errorf(format!(
                        "wrong type for value; expected {}; got {}",
                        typ.go_name(),
                        value.type_name()
                    ))
                }
            }
        }
    }

    fn eval_arg(&mut self, dot: &Value, typ: Option<ArgType>, n: &'t Arg) -> R<Value> {
        self.at(At::Arg(n));
        match n {
            Arg::Dot(_) => return self.validate_type(dot.clone(), typ),
            Arg::Nil(_) => {
                return match typ {
                    None => Ok(Value::Missing),
                    Some(t) if t.can_be_nil() => Ok(if t == ArgType::Any { Value::Nil } else { t.zero() }),
                    Some(t) => self.errorf(format!("cannot assign nil to {}", t.go_name())),
                };
            }
            Arg::Field { ident, .. } => {
                let v = self.eval_field_chain(
                    dot,
                    dot,
                    self.dot_iface,
                    At::Arg(n),
                    ident,
                    Some(std::slice::from_ref(n)),
                    None,
                )?;
                return self.validate_type(v, typ);
            }
            Arg::Variable(v) => {
                let val = self.eval_variable_node(dot, v, None, None)?;
                return self.validate_type(val, typ);
            }
            Arg::Pipe(p) => {
                let v = self.eval_pipeline(dot, p)?;
                return self.validate_type(v, typ);
            }
            Arg::Identifier { name, .. } => {
                let v = self.eval_function(dot, n, name, At::Arg(n), None, None)?;
                return self.validate_type(v, typ);
            }
            Arg::Chain { .. } => {
                let v = self.eval_chain_node(dot, n, None, None)?;
                return self.validate_type(v, typ);
            }
            _ => {}
        }
        let Some(typ) = typ else {
            return self.eval_empty_interface(dot, n);
        };
        match typ {
            ArgType::Bool => match n {
                Arg::Bool { val, .. } => Ok(Value::Bool(*val)),
                _ => self.errorf(format!("expected bool; found {n}")),
            },
            ArgType::Float64 => match n {
                Arg::Number(num) if num.is_float => Ok(Value::Float(num.float64)),
                _ => self.errorf(format!("expected float; found {n}")),
            },
            ArgType::Int | ArgType::Int64 => match n {
                Arg::Number(num) if num.is_int => Ok(if typ == ArgType::Int {
                    Value::int(num.int64)
                } else {
                    Value::Int(num.int64, crate::value::IntType::Int64)
                }),
                _ => self.errorf(format!("expected integer; found {n}")),
            },
            // Go's evalUnsignedInteger: SetUint truncates to the type's width.
            ArgType::Uint32 => match n {
                Arg::Number(num) if num.is_uint => Ok(Value::Uint(
                    num.uint64 & u64::from(u32::MAX),
                    crate::value::UintType::Uint32,
                )),
                _ => self.errorf(format!("expected unsigned integer; found {n}")),
            },
            ArgType::Any | ArgType::Reflect => self.eval_empty_interface(dot, n),
            ArgType::Str => match n {
                Arg::String { text, .. } => Ok(Value::str(text.as_str())),
                _ => self.errorf(format!("expected string; found {n}")),
            },
            t => self.errorf(format!("can't handle {n} for arg of type {}", t.go_name())),
        }
    }

    fn eval_empty_interface(&mut self, dot: &Value, n: &'t Arg) -> R<Value> {
        self.at(At::Arg(n));
        match n {
            Arg::Bool { val, .. } => Ok(Value::Bool(*val)),
            Arg::Dot(_) => Ok(dot.clone()),
            Arg::Field { ident, .. } => {
                self.eval_field_chain(dot, dot, self.dot_iface, At::Arg(n), ident, None, None)
            }
            Arg::Identifier { name, .. } => self.eval_function(dot, n, name, At::Arg(n), None, None),
            Arg::Nil(_) => self.errorf("evalEmptyInterface: nil (can't happen)"),
            Arg::Number(num) => self.ideal_constant(n, num),
            Arg::String { text, .. } => Ok(Value::str(text.as_str())),
            Arg::Variable(v) => self.eval_variable_node(dot, v, None, None),
            Arg::Pipe(p) => self.eval_pipeline(dot, p),
            Arg::Chain { .. } => self.errorf(format!(
                "can't handle assignment of {n} to empty interface argument"
            )),
        }
    }

    fn print_value(&mut self, node: &'t Node, v: &Value) {
        self.at(At::Node(node));
        match v {
            Value::Missing => self.out.push_str("<no value>"),
            Value::String(s) => self.out.push_str(s),
            v => {
                if let Some(watch) = self.watch {
                    watch.print(v);
                }
                let s = crate::fmt::sprint_value(v);
                self.out.push_str(&s);
            }
        }
    }
}

/// Whether `v`'s Go type is `typ` (`v.type_name() == typ.go_name()`), without building the
/// type name of lists and maps.
fn has_go_type(v: &Value, typ: ArgType) -> bool {
    use crate::value::IntType;
    match (v, typ) {
        (Value::Object(o), _) => o.type_name() == typ.go_name(),
        (Value::String(_), ArgType::Str)
        | (Value::Int(_, IntType::Int), ArgType::Int)
        | (Value::Int(_, IntType::Int64), ArgType::Int64)
        | (Value::Float(_), ArgType::Float64)
        | (Value::Bool(_), ArgType::Bool)
        | (Value::Nil, ArgType::Any) => true,
        (Value::List(l), ArgType::StringSlice) => l.elem == ElemType::String,
        (Value::List(l), ArgType::AnySlice) => l.elem == ElemType::Any,
        (Value::Map(m), ArgType::AnyMap) => m.elem == ElemType::Any,
        (Value::Map(m), ArgType::StringMap) => m.elem == ElemType::String,
        _ => false,
    }
}

/// Go's `reflect.Value.String()`: the string itself, or `<T Value>`.
fn reflect_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Missing => "<invalid Value>".into(),
        v => format!("<{} Value>", v.type_name()),
    }
}

/// Converts a flow result of a top-level walk into the public error type.
pub(crate) fn finish(r: R<()>) -> Result<(), ExecError> {
    match r {
        Ok(()) | Err(Flow::Break) | Err(Flow::Continue) => Ok(()),
        Err(Flow::Error(e)) => Err(*e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{IntType, UintType};

    /// `{{ $l = append $l x }}` extends the list in place only when nothing else holds it: the
    /// results are the copying call's.
    #[test]
    fn appending_to_a_variable_is_the_copying_calls_append() {
        let cases = [
            // Another holder keeps its list.
            (
                "{{ $a := list 1 }}{{ $b := $a }}{{ $a = append $a 2 }}{{ $b }} {{ $a }}",
                "[1] [1 2]",
            ),
            // A range over the list sees the list it started with.
            (
                "{{ $l := list 1 2 }}{{ range $l }}{{ $l = append $l . }}{{ end }}{{ $l }}",
                "[1 2 1 2]",
            ),
            // A loop in an inner scope assigns the outer variable.
            (
                "{{ $l := list }}{{ range until 3 }}{{ $l = push $l . }}{{ end }}{{ $l }}",
                "[0 1 2]",
            ),
            // The result is a []interface{}, whatever the list was.
            (
                r#"{{ $s := splitList "," "a,b" }}{{ $t := $s }}{{ $s = mustAppend $s "c" }}{{ printf "%T %T %v" $t $s $s }}"#,
                "[]string []interface {} [a b c]",
            ),
            // The value of the pipeline is the list; a map holding it keeps its own.
            (
                "{{ $l := list 0 }}{{ $m := dict \"l\" $l }}{{ $l = append $l $l }}{{ $l }} {{ $m.l }}",
                "[0 [0]] [0]",
            ),
            // Not a list: the call's error.
            ("{{ $l := 1 }}{{ $l = append $l 2 }}", "error"),
        ];
        for (text, want) in cases {
            let t = Template::new("t")
                .funcs(&crate::sprig::funcs())
                .parse(text)
                .expect("parses");
            let got = t.execute(&Value::Missing).unwrap_or_else(|_| "error".to_owned());
            assert_eq!(got, want, "{text}");
        }
    }

    /// `has_go_type` is an allocation-free `type_name() == go_name()`: check it against that.
    #[test]
    fn has_go_type_agrees_with_type_names() {
        use std::collections::BTreeMap;
        let values = [
            Value::Missing,
            Value::Nil,
            Value::Bool(true),
            Value::int(1),
            Value::Int(1, IntType::Int64),
            Value::Int(1, IntType::Int32),
            Value::Uint(1, UintType::Uint8),
            Value::Float(1.0),
            Value::Complex(1.0, 0.0),
            Value::str("s"),
            Value::list(vec![]),
            Value::string_list(vec![]),
            Value::map(BTreeMap::new()),
            Value::string_map(BTreeMap::new()),
        ];
        let types = [
            ArgType::Any,
            ArgType::Reflect,
            ArgType::Str,
            ArgType::Int,
            ArgType::Int64,
            ArgType::Float64,
            ArgType::Bool,
            ArgType::StringSlice,
            ArgType::AnySlice,
            ArgType::AnyMap,
            ArgType::StringMap,
        ];
        for v in &values {
            for t in types {
                assert_eq!(has_go_type(v, t), v.type_name() == t.go_name(), "{v:?} {t:?}");
            }
        }
    }
}
