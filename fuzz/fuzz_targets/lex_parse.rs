//! Fuzz target: the lexer and parser never panic or hang on arbitrary input.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;

fn funcs() -> Arc<gotemplate::FuncMap> {
    static F: OnceLock<Arc<gotemplate::FuncMap>> = OnceLock::new();
    F.get_or_init(|| Arc::new(gotemplate::sprig::funcs())).clone()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The lexer alone, to the end of input or the first error.
    let mut lex = gotemplate::lex::Lexer::new(text, "", "");
    for _ in 0..=text.len() + 1 {
        let item = lex.next_item();
        if matches!(item.typ, gotemplate::lex::ItemType::Eof | gotemplate::lex::ItemType::Error) {
            break;
        }
    }
    // The parser, with sprig's function names.
    let _ = gotemplate::Template::new("t").shared_funcs(funcs()).parse(text);
});
