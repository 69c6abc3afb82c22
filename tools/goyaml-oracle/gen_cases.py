#!/usr/bin/env python3
"""Generate the goyaml differential corpus (crates/goyaml/tests/oracle/cases.json).

Each case is {"name": ..., "json": <value>}. Numbers are written with the
exact text given here (raw JSON fragments), so the oracle and the Rust test
see the same number text. Deterministic: rerunning gives the same file.
"""
import json
import os
import sys

cases = []
names = set()


def add(name, value=None, raw=None):
    if name in names:
        raise SystemExit(f"duplicate case {name}")
    names.add(name)
    text = raw if raw is not None else json.dumps(value, ensure_ascii=False, sort_keys=False)
    cases.append((name, text))


# --- strings in value position, as a map value, a list item and a key ---
strings = {
    # YAML 1.1 bool/null lookalikes
    "y": "y", "Y": "Y", "yes": "yes", "Yes": "Yes", "YES": "YES", "yEs": "yEs",
    "n": "n", "N": "N", "no": "no", "No": "No", "NO": "NO",
    "true": "true", "True": "True", "TRUE": "TRUE", "tRUE": "tRUE",
    "false": "false", "False": "False", "FALSE": "FALSE",
    "on": "on", "On": "On", "ON": "ON", "off": "off", "Off": "Off", "OFF": "OFF",
    "null": "null", "Null": "Null", "NULL": "NULL", "nUll": "nUll", "tilde": "~", "tilde2": "~~",
    "empty": "", "merge": "<<",
    # numbers and lookalikes
    "int": "15001", "neg_int": "-15", "plus_int": "+1", "zero": "0", "neg_zero": "-0",
    "octal_leading0": "017", "octal_0o": "0o17", "octal_0O": "0O17", "hex": "0x1F", "hex_upper": "0X1f",
    "hex_bad": "0xZZ", "hex_empty": "0x", "bin": "0b101", "neg_bin": "-0b101", "bin_bad": "0b102",
    "eight": "08", "nine_oct": "09", "underscore_int": "1_000", "underscore_lead": "_1000",
    "underscore_trail": "1000_", "float": "1.0", "float_half": "0.5", "dot5": ".5", "plus_dot5": "+.5",
    "one_dot": "1.", "dot_underscore": ".4_350", "dot_exp_underscore": ".5e3_0", "dot_lead_underscore": "._5",
    "dot_trail_underscore": ".5_", "dot_underscore_e": ".5_e3", "dot_dot": ".5.5", "int_double_underscore": "1__0",
    "float_underscore": "1_0.5", "bin_neg_after_prefix": "0b-1", "bin_plus_after_prefix": "0b+1",
    "bin_neg_neg": "-0b-1", "bin_upper": "0B11", "sign_underscore": "+_1", "dot_e": ".e5", "dot_upper_e": ".5E-3", "exp": "1e3", "exp_upper": "1E3", "exp_neg": "1e-3", "exp_plus": "1e+3",
    "exp_bad": "1e", "exp_dot": "1.e5", "exp_big": "1e999", "dot_exp_big": ".1e999", "exp_tiny": "1e-999",
    "inf": ".inf", "Inf": ".Inf", "INF": ".INF", "pinf": "+.inf", "ninf": "-.inf", "nan": ".nan",
    "NaN": ".NaN", "inf_bare": "inf", "nan_bare": "nan", "Infinity": "Infinity", "dot": ".", "dotdot": "..",
    "int_big": "99999999999999999999", "uint_max": "18446744073709551615", "int_max": "9223372036854775807",
    "int_min": "-9223372036854775808", "int_min_m1": "-9223372036854775809", "hex_huge": "0xFFFFFFFFFFFFFFFFFF",
    "hex_u64": "0xFFFFFFFFFFFFFFFF", "plus_u64": "+18446744073709551615", "version": "1.2.3", "ip": "10.0.0.1",
    "cidr": "10.0.0.0/8", "semver": "v1.2", "dash": "-", "plus": "+", "dashdash": "--", "dash_num": "-1-2",
    "base60": "1:20", "base60b": "190:20:30", "base60_frac": "-1_0:59:3.5_", "base60_bad": "1:60",
    "base60_colon_end": "1:", "time": "12:30", "time3": "12:30:45", "port_pair": "80:8080",
    "ts_date": "2001-12-14", "ts_short": "2001-1-2", "ts_bad_day": "2001-02-29", "ts_leap": "2000-02-29",
    "ts_bad_month": "2001-13-01", "ts_full": "2001-12-14T21:59:43.10-05:00", "ts_lower_t": "2001-12-14t21:59:43.10Z",
    "ts_space": "2001-12-14 21:59:43.10", "ts_2spaces": "2001-12-14  21:59:43.10", "ts_no_zone": "2001-12-14T21:59:43",
    "ts_space_zone": "2001-12-14 21:59:43.10 -5", "ts_5digit": "20011-12-14", "ts_trailing": "2001-12-14x",
    "ts_hour24": "2001-12-14T24:00:00Z", "ts_offset24": "2001-12-14T01:00:00+24:00",
    "ts_offset25": "2001-12-14T01:00:00+25:00", "ts_comma": "2001-12-14 1:2:3,5", "ts_rfc3339": "2026-11-30T08:00:00Z",
    # indicators at the start
    "ind_dash_space": "- a", "ind_dash_word": "-a", "ind_q": "?", "ind_q_space": "? a", "ind_q_word": "?a",
    "ind_colon": ":", "ind_colon_space": ": a", "ind_colon_word": ":a", "ind_comma": ",a", "ind_lbracket": "[a",
    "ind_rbracket": "]a", "ind_lbrace": "{a", "ind_rbrace": "}a", "ind_hash": "#a", "ind_amp": "&a", "ind_star": "*",
    "ind_star_word": "*a", "ind_bang": "!a", "ind_pipe": "|a", "ind_gt": ">a", "ind_squote": "'a", "ind_dquote": "\"a",
    "ind_percent": "%a", "ind_at": "@a", "ind_backtick": "`a", "ind_3dash": "---", "ind_3dash_word": "---a",
    "ind_3dot": "...", "ind_3dot_word": "...a", "json_obj": "{\"initContainers\":[{\"name\":\"a\"}]}",
    "json_arr": "[{\"name\": \"a\"}]",
    # indicators inside
    "in_dash": "a-b", "in_q": "a?b", "in_colon": "a:b", "in_colon_space": "a: b", "in_colon_end": "a:",
    "in_comma": "a,b", "in_brackets": "a[b]", "in_braces": "a{b}", "in_hash": "a#b", "in_space_hash": "a #b",
    "in_amp": "a&b", "in_star": "a*b", "in_bang": "a!b", "in_pipe": "a|b", "in_gt": "a>b", "in_squote": "a'b",
    "in_dquote": "a\"b", "in_percent": "a%b", "in_at": "a@b", "in_backtick": "a`b", "in_backslash": "a\\b",
    "url": "http://example.com:8080/path?q=1#frag", "colon_tab": "a:\tb", "hash_tab": "a\t#b",
    "squote_only": "'", "dquote_only": "\"", "backslash_only": "\\", "squotes": "it's 'quoted'",
    "mixed_quotes": "'\"'", "glob": "*.example.com", "annotation": "sidecar.istio.io/inject",
    "cmd": "iptables -t nat -A OUTPUT -p tcp -j ISTIO_OUTPUT", "equals": "a=b", "percent_fmt": "%d items",
    # spaces and tabs
    "lead_space": " a", "trail_space": "a ", "both_space": " a ", "only_space": " ", "only_spaces": "   ",
    "inner_spaces": "a  b", "tab": "\t", "lead_tab": "\ta", "trail_tab": "a\t", "inner_tab": "a\tb",
    # unicode and control characters
    "unicode_latin": "café", "unicode_cjk": "日本語", "unicode_emoji": "😀", "unicode_emoji_in": "a😀b",
    "nbsp": "a\u00a0b", "nel": "a\u0085b", "ls": "a\u2028b", "ps": "a\u2029b", "bom_start": "\ufeffab",
    "bom_inner": "a\ufeffb", "zwsp": "a\u200bb", "private_use": "\ue000", "u_fffd": "\ufffd",
    "nul": "a\u0000b", "bell": "\u0007", "backspace": "\b", "vtab": "\u000b", "formfeed": "\f",
    "escape": "\u001b[0m", "cr_only": "a\rb", "ctrl_1f": "\u001f", "surrogate_range": "\ud7ff",
    "html_chars": "<a href=\"x\">&amp;</a>", "arabic_digits": "٣٤",
    # multi-line
    "ml_no_trailing": "a\nb", "ml_trailing": "a\nb\n", "ml_two_trailing": "a\nb\n\n", "ml_three_trailing": "a\n\n\n",
    "ml_only_newline": "\n", "ml_only_newlines": "\n\n", "ml_lead_newline": "\na", "ml_lead_space": " a\nb",
    "ml_lead_spaces2": "  a\n  b\n", "ml_trailing_space_line": "a \nb", "ml_space_after_break": "a\n b",
    "ml_trailing_space_end": "a\nb ", "ml_crlf": "a\r\nb\r\n", "ml_cr_lf_mix": "a\rb\nc", "ml_tab": "a\n\tb",
    "ml_empty_lines": "a\n\nb", "ml_blank_line_spaces": "a\n  \nb", "ml_unicode": "ä\nö\n", "ml_nul": "a\n\u0000",
    "ml_emoji": "😀\n", "ml_hash": "# comment\nkey: value\n", "ml_indicators": "- a\n- b\n", "ml_quotes": "'a'\n\"b\"",
    "ml_long": ("word " * 30).strip() + "\n" + ("x" * 100) + "\n", "ml_nel": "a\u0085b\nc",
    "ml_ls": "a\u2028b\nc", "ml_ends_ls": "a\nb\u2028", "ml_bom": "\ufeffa\nb",
    "ml_script": "#!/bin/bash\nset -e\nif [ -f /x ]; then\n  echo \"hi: there\"\nfi\n",
}
for k, v in strings.items():
    add(f"str/{k}", {"v": v})
    add(f"item/{k}", [v])
    add(f"key/{k}", {v: 1})
    add(f"root/{k}", v)

# --- folding around 80 columns, for each style and depth ---
def words(n, w="word"):
    return " ".join(f"{w}{i}" for i in range(n))

long_values = {
    "plain": words(30),
    "plain_exact": "a" * 75 + " " + "b" * 10 + " c",
    "plain_double_space": ("abcdefghi  " * 12).strip(),
    "plain_nospace": "x" * 200,
    "plain_spaces_at_80": "x" * 79 + "  y z" + " w" * 20,
    "single": "'" + words(25) + "'",
    "single_colon": words(15) + ": " + words(15),
    "single_trailing": words(25) + " ",
    "single_leading": " " + words(25),
    "single_double_space": ": " + ("abcdefghi  " * 12).strip(),
    "single_long_word_end": words(16) + " " + "y" * 60,
    "double": "\t" + words(25),
    "double_int_like": "1" * 100,
    "double_spaces": "\t" + ("abcdefghi  " * 12).strip(),
    "double_trailing_space": "\t" + words(20) + " ",
    "double_escape_near80": "\t" + "x" * 76 + " \t " + words(10),
    "cncf_networks": "[{\"name\":\"istio-cni\",\"namespace\":\"default\"},{\"name\":\"macvlan-conf\",\"namespace\":\"default\",\"interface\":\"net1\"}]",
    "unicode_fold": " ".join(["日本語テキスト"] * 20),
    "emoji_fold": " ".join(["😀x"] * 30),
    "literal_long": words(40) + "\n" + words(40),
}
for k, v in long_values.items():
    add(f"fold/top/{k}", {"key": v})
    add(f"fold/nested/{k}", {"a": {"bb": {"ccc": {"dddd": v}}}})
    add(f"fold/list/{k}", {"list": [v, {"k": v}]})
    add(f"fold/listlist/{k}", [[v]])
    add(f"fold/root/{k}", v)
    add(f"fold/longkey/{k}", {("k" * 60): v})
for n in range(70, 90, 3):
    add(f"fold/width/{n}", {"key": "a" * n + " b c " + "d" * 10 + " e"})
    add(f"fold/width_single/{n}", {"key": "'" + "a" * n + " b c " + "d" * 10 + " e"})
    add(f"fold/width_double/{n}", {"key": "\t" + "a" * n + " b c " + "d" * 10 + " e"})

# --- keys ---
# Go's natural order is not transitive for some key sets (a10 < a1a < a2 <
# a10), and Go's map iteration is random, so Go's own output for such a set
# varies between runs. Compare those keys in pairs, where it is fixed.
pair_keys = ["a10", "a2", "a1", "a", "b", "B", "A", "aa", "a_", "a-", "a.", "1", "10", "2", "01", "001",
             "a01", "a001", "a0", "a00", "_", "-", "Z", "z", "é", "ä", "日", "a1b", "a1a", "a10b", "x9y",
             "x10y", "x09y", "a0b", "a00b", "10a", "010a", "a٣", "a3", "a١٠", "ǅ", "ʰ", "Ⅻ", "a²"]
for i, x in enumerate(pair_keys):
    for y in pair_keys[i + 1:]:
        add(f"keypair/{x}|{y}", {x: 1, y: 2})
add("keys/natural", {k: 1 for k in ["a10", "a2", "a1", "a", "b", "B", "A", "aa", "a-", "a.", "1", "10", "2", "_", "-", "Z", "z", "é", "日", "x9y", "x10y"]})
add("keys/digits_letters", {k: 1 for k in ["1a", "1b", "a1", "b1", "11", "1", "a", "1_", "1-", "_1", "-1"]})
add("keys/prefix", {k: 1 for k in ["abc", "ab", "a", "abcd", "abd", "ac"]})
add("keys/k8s", {k: 1 for k in ["apiVersion", "kind", "metadata", "spec", "status", "data", "stringData", "type"]})
add("keys/labels", {k: "v" for k in ["app", "app.kubernetes.io/name", "app.kubernetes.io/version", "security.istio.io/tlsMode", "service.istio.io/canonical-name", "version", "sidecar.istio.io/inject"]})
add("keys/long_129", {"k" * 129: 1, "a": 2})
add("keys/long_128", {"k" * 128: 1})
add("keys/long_value_map", {"k" * 130: {"x": 1}})
add("keys/long_value_list", {"k" * 130: [1, 2]})
add("keys/multiline", {"a\nb": 1, "c": 2})
add("keys/multiline_map", {"a\nb\n": {"x": [1]}})
add("keys/multiline_list", {"x\n": [1, 2]})
add("keys/long_fold", {words(30): "v"})
add("keys/empty_and_space", {"": 1, " ": 2, "  ": 3})
add("keys/very_long_1100", {"k" * 1100: 1})
add("keys/json_len_1022", {"k" * 1022: 1})
add("keys/json_len_1023", {"k" * 1023: 1})
add("keys/json_len_1022_escaped", {"<" * 170 + "k" * 2: 1})
add("keys/json_len_1026_escaped", {"<" * 170 + "\n" * 3: 1})
add("keys/json_len_1022_quotes", {'"' * 511: 1})
add("keys/json_len_1024_quotes", {'"' * 512: 1})
add("keys/json_len_1022_unicode", {"日" * 1022: 1})
add("keys/json_len_1023_unicode", {"😀" * 1023: 1})
add("keys/ctrl_key", {"a\u007f": 1})
add("gap/del_in_list", ["ok", ["a\u009f"]])
add("gap/del", {"v": "a\u007fb"})
add("gap/c1", {"v": "a\u0080b"})
add("gap/fffe", {"v": "a\ufffeb"})
add("gap/ffff", {"v": "\uffff"})
add("keys/special", {k: 1 for k in ["on", "yes", "~", "1.0", "-", "a: b", "#", "@x", "a b"]})

# --- numbers ---
nums = {
    "zero": "0", "one": "1", "neg": "-1", "big": "15020", "i64max": "9223372036854775807",
    "i64min": "-9223372036854775808", "u64max": "18446744073709551615", "beyond_u64": "18446744073709551616",
    "huge_int": "100000000000000000000000", "half": "0.5", "neg_half": "-0.5", "one_point_zero": "1.0",
    "million_float": "1000000.0", "e6": "1e6", "e6_upper": "1E6", "e20": "1e20", "e21": "1e21", "e22": "1e22",
    "neg_e21": "-1e21", "e_minus6": "1e-6", "e_minus7": "1e-7", "small": "0.000001", "smaller": "0.0000001",
    "pi": "3.141592653589793", "third": "0.3333333333333333", "neg_zero": "-0", "neg_zero_f": "-0.0",
    "float_1_5e6": "1500000.5", "e100": "1e100", "max": "1.7976931348623157e308", "min_sub": "5e-324",
    "tenth": "0.1", "point_one_plus": "0.30000000000000004", "123456_5": "123456.5", "1234567_5": "1234567.5",
    "twoe19": "2e19", "e19": "1e19", "two63_f": "9223372036854775808.0", "u64_float": "18446744073709551615.0",
    "int_as_e": "15020e0", "exp_neg_int": "1.5e-5", "e_minus5": "0.00001", "e_minus4": "0.0001",
    "big_frac": "123456789.123", "tie_even_down": "-783373024025016.2", "tie_even_down2": "178282446750899.12",
    "tie_even_up": "1.2132146974191752e15", "near_tie": "2.5760470378398442e+29", "neg_big": "-123456789012", "float_precise": "0.1000000000000000055511151231257827",
}
for k, t in nums.items():
    add(f"num/{k}", raw='{"v": ' + t + '}')
    add(f"numlist/{k}", raw='[' + t + ']')

# --- structure ---
add("struct/empty_map", {})
add("struct/empty_list", [])
add("struct/null", None)
add("struct/true", True)
add("struct/false", False)
add("struct/int", raw="42")
add("struct/nested_empty", {"a": {}, "b": [], "c": [{}], "d": [[]], "e": {"f": {}}})
add("struct/list_of_lists", [[1, 2], [3, [4, [5]]], []])
add("struct/list_of_maps", [{"a": 1, "b": 2}, {"c": {"d": [1, 2]}}, {}])
add("struct/map_of_lists", {"a": [1, 2], "b": [[1], {"x": [2]}], "c": []})
add("struct/deep", {"a": {"b": {"c": {"d": {"e": {"f": [{"g": [{"h": "i"}]}]}}}}}})
add("struct/nulls", {"a": None, "b": [None, None], "c": {"d": None}})
add("struct/bools", {"a": True, "b": False, "c": [True, False]})
add("struct/mixed_list", [1, "a", None, True, 1.5, {"k": "v"}, ["x"], [], {}])
add("struct/literal_in_list", ["a\nb", {"k": "c\nd\n"}, [" e\nf"]])
add("struct/literal_in_listlist", [["a\nb"]])
add("struct/literal_deep", {"a": {"b": [{"c": "x\ny\n"}]}})
add("struct/list_in_list_in_map", {"a": [[1, 2], [3]]})
add("struct/map_in_list_in_list", [[{"a": 1, "b": 2}]])

# --- Kubernetes-like objects ---
add("k8s/pod", {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "hello", "annotations": {"prometheus.io/port": "15020", "prometheus.io/scrape": "true",
                 "sidecar.istio.io/status": "{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"],\"volumes\":[\"istio-envoy\",\"istio-data\"],\"imagePullSecrets\":null}",
                 "kubectl.kubernetes.io/default-container": "hello"},
                 "labels": {"app": "hello", "security.istio.io/tlsMode": "istio"}, "creationTimestamp": None},
    "spec": {"containers": [{"name": "hello", "image": "fake.docker.io/google-samples/hello-go-gke:1.0",
                             "ports": [{"containerPort": 80, "name": "http"}], "resources": {},
                             "args": ["proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local",
                                      "--proxyLogLevel=warning", "--concurrency", "2"],
                             "env": [{"name": "PROXY_CONFIG", "value": "{\"tracing\":{\"zipkin\":{\"address\":\"zipkin.istio-system:9411\"}},\"discoveryAddress\":\"istiod.istio-system.svc:15012\"}\n"},
                                     {"name": "ISTIO_META_APP_CONTAINERS", "value": "hello"},
                                     {"name": "EMPTY", "value": ""}],
                             "securityContext": {"runAsUser": 1337, "runAsGroup": 1337, "readOnlyRootFilesystem": True,
                                                 "capabilities": {"drop": ["ALL"]}}}],
             "volumes": [{"name": "istio-envoy", "emptyDir": {"medium": "Memory"}},
                         {"name": "istio-token", "projected": {"sources": [{"serviceAccountToken": {"audience": "istio-ca", "expirationSeconds": 43200, "path": "istio-token"}}]}}]},
    "status": {},
})

# --- seeded random cases: strings built from characters that matter to the
# emitter, at several depths, as values, list items and keys ---
import random

rng = random.Random(20261130)
palette = (["a", "b", "c", "x", "Z", "0", "1", "9"] * 6 + [" "] * 14 +
           [":", "#", "-", "?", "'", '"', "\n", "\t", "\\", ",", "[", "]", "{", "}", "!", "&", "*", "|",
            ">", "%", "@", "`", "~", ".", "_", "/", "=", "\r", "é", "日", "😀", "\u0085", "\u2028",
            "\ufeff", "\u00a0", "\u0000", "\u001b", "\ue000"])


def rand_string(key=False):
    # A raw NEL in a key makes Go's JSON-to-YAML step fail; keep keys clean.
    chars = [c for c in palette if c != "\u0085"] if key else palette
    n = rng.choice([0, 1, 2, 3, 5, 8, 13, 40, 70, 78, 79, 80, 81, 82, 85, 90, 120, 200])
    return "".join(rng.choice(chars) for _ in range(n))


def rand_words():
    out = []
    while len(" ".join(out)) < rng.randint(60, 260):
        out.append(rng.choice(["a", "bb", "ccc", "dddd", "e" * 9, "f" * 17, "x:", "#y", "'q'", "-", "1.5", "on"]))
    sep = rng.choice([" ", " ", " ", "  ", "\n", " \n"])
    text = sep.join(out)
    if rng.random() < 0.3:
        text = rng.choice([" ", "'", "\t", "- ", ": ", "\n"]) + text
    if rng.random() < 0.3:
        text += rng.choice([" ", "\n", "\n\n", ":"])
    return text


def nest(v, depth):
    for _ in range(depth):
        r = rng.random()
        if r < 0.4:
            v = {rng.choice(["k", "key", "a" * rng.randint(1, 30)]): v}
        elif r < 0.7:
            v = [v]
        else:
            v = {"m": [{"n": v, "o": 1}]}
    return v


for i in range(400):
    s = rand_string() if i % 2 == 0 else rand_words()
    add(f"random/value/{i}", nest({"v": s}, rng.randint(0, 4)))
for i in range(100):
    add(f"random/key/{i}", nest({rand_string(key=True) if i % 2 else rand_words(): rng.randint(0, 9)}, rng.randint(0, 3)))

os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)
with open(sys.argv[1], "w", encoding="utf-8") as f:
    f.write("[\n")
    for i, (name, text) in enumerate(cases):
        sep = "," if i + 1 < len(cases) else ""
        f.write(f"  {{\"name\": {json.dumps(name, ensure_ascii=False)}, \"json\": {text}}}{sep}\n")
    f.write("]\n")
print(f"{len(cases)} cases", file=sys.stderr)
