"""Writes the small seed corpora in fuzz/corpus/ (run once; the seeds are committed)."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def st(header, data):
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


put("safetensors", "two", st({"__metadata__": {"format": "pt"},
                              "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                              "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]}}, bytes(range(22))))
put("safetensors", "empty", st({}, b""))


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(kvs, tensors, data):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, payload in kvs:
        out += gstr(k) + struct.pack("<I", t) + payload
    for name, dims, t, off in tensors:
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", t, off)
    out += b"\0" * (-len(out) % 32)
    return out + data


kvs = [("general.architecture", 8, gstr("llama")), ("general.alignment", 4, struct.pack("<I", 32)),
       ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 2) + gstr("a") + gstr("b")),
       ("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 2) + struct.pack("<ff", 0.5, 1.5)),
       ("llama.rope.freq_base", 6, struct.pack("<f", 10000.0))]
q8 = struct.pack("<e", 0.5) + bytes(range(32))
q4 = struct.pack("<e", 0.25) + bytes(range(16))
q41 = struct.pack("<ee", 0.25, -1.0) + bytes(range(16))
data = q8 + bytes(30) + q4 + bytes(14) + q41 + bytes(12) + struct.pack("<4f", 1, 2, 3, 4)
put("gguf", "mixed", gguf(kvs, [("q8", [32], 8, 0), ("q4", [32], 2, 64), ("q41", [32], 3, 96), ("f", [2, 2], 0, 128)],
                          data))

put("config", "llama", json.dumps({
    "model_type": "llama", "vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
    "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "rope_theta": 100000,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0}, "eos_token_id": [1, 2], "tie_word_embeddings": True}))
put("config", "qwen3_moe_fp8", json.dumps({
    "model_type": "qwen3_moe", "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128,
    "moe_intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "num_experts": 8, "num_experts_per_tok": 2, "mlp_only_layers": [1],
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}))
put("config", "compressed", json.dumps({
    "model_type": "qwen2", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
    "num_attention_heads": 2, "quantization_config": {
        "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
        "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}}))

# Chat templates: the supported families' own, and small ones that reach the
# arithmetic, filters, methods, loops, slices, namespaces and whitespace rules.
TEMPLATES = os.path.join(HERE, "..", "tests", "data", "chat_templates")
for name in sorted(os.listdir(TEMPLATES)):
    with open(os.path.join(TEMPLATES, name), "rb") as f:
        put("chat_template", name.replace(".jinja", ""), f.read())
for i, src in enumerate([
    "{{ 1 + 2 * 3 - 4 // 3 % 2 }} {{ 2 ** 10 }} {{ -7 / 2 }} {{ 1.5 ** 2 }} {{ 7 // -2.0 }} {{ (1, 2) }}",
    "{{ 9223372036854775807 - 1 }} {{ -(3) }} {{ 10 % 3 }} {{ 1e10 * 1e10 }} {{ 0.1 + 0.2 }} {{ 3 > 2 >= 2 }}",
    "{{ '42'|int + '1.5'|float }} {{ -3|abs }} {{ 2.567|round(2) }} {{ 3.7|round(method='floor') }} {{ true + 1 }}",
    "{{ 'ab' * 3 }} {{ [1, 2] * 2 }} {{ 'a' ~ 1 ~ none }} {{ [1] + [2] }} {{ 'x' in 'xyz' }} {{ 2 not in [1] }}",
    "{% for i in range(3) %}{{ loop.index }}/{{ loop.length }}{% if not loop.last %},{% endif %}{% endfor %}",
    "{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{% else %}none{% endfor %}{% for k, v in {'a': 1}.items() %}{{ k }}{{ v }}{% endfor %}",
    "{% for i in range(10) %}{% if i == 5 %}{% break %}{% endif %}{% if i is odd %}{% continue %}{% endif %}{{ i }}{% endfor %}",
    "{% set ns = namespace(n=0, s='') %}{% for i in range(5) %}{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }}{{ ns.s }}",
    "{% set x %}captured {{ 1 }}{% endset %}{{ x|trim|upper }} {{ x|length }}",
    "{{ 'Hello World'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ' x '.strip() }} {{ 'xhix'.strip('x') }}",
    "{{ 'abc'[::-1] }} {{ [1, 2, 3, 4][1:3] }} {{ [1, 2, 3][-1] }} {{ 'h\u00e9llo'[1] }} {{ [1, 2, 3][::2] }} {{ 'abc'[5:] }}",
    "{{ 'abcabc'.replace('b', 'x', 1) }} {{ 'abc'.find('c') }} {{ 'abc'.rfind('a') }} {{ 'aaa'.count('a') }} {{ '-'.join(['a', 'b']) }}",
    "{{ [3, 1, 2]|sort|join('-') }} {{ ['b', 'A']|sort(reverse=true) }} {{ [1, 2, 1]|unique|list }} {{ [1, 2]|first }} {{ [1, 2]|last }}",
    "{{ {'a': [1, 2.5, '\u00fc', none, true]}|tojson }} {{ {'a': {'b': []}}|tojson(indent=2) }} {{ 'x'|tojson }}",
    "{{ [{'n': 'x'}, {'n': 'y'}]|map(attribute='n')|join }} {{ [1, 2, 3]|select('odd')|list }} {{ [0, 1]|reject|list }}",
    "{{ [{'r': 'u'}, {'r': 'a'}]|selectattr('r', 'equalto', 'a')|list }} {{ [{'r': 1}]|rejectattr('r')|list }}",
    "{{ d.get('k', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {{ missing|default('d') }} {{ ''|default('e', true) }}",
    "  {%- if true %}\n    yes\n  {% endif %}\n{# c #}\n  {% if true -%}\n  x  \n  {%- endif %}\n{%+ if true %}y{% endif %}",
    "{% raw %}{{ not rendered }}{% endraw %} {{ '\\n'|tojson }} {{ \"it's\" }} {{ 'a' if false else 'b' }} {{ 'c' if true }}",
    "{{ raise_exception('stop') if false }} {{ strftime_now('%Y') is string }} {{ x is defined }} {{ none is none }} {{ 3 is divisibleby(3) }}",
    "{{ messages[0].content }}{% for m in messages[1:] %}{{ m.role|upper }}: {{ m.content|e }}{% endfor %}{{ bos_token ~ eos_token }}",
    "{% macro f(x) %}{{ x }}{% endmacro %}{{ f(1) }}",
    # quick ways to the limits: overflow, zero division, range, memory, nesting
    "{{ 9223372036854775807 + 1 }}", "{{ 2 ** 64 }}", "{{ 1 // 0.0 }}", "{{ range(1000000) }}", "{{ [1] * 1000000000000 }}",
    "{{ x" + ".a" * 300 + " }}{% set ns = namespace(l=[]) %}{% for i in range(300) %}{% set ns.l = [ns.l] %}{% endfor %}",
    "{% raw %}x{% endraw",
]):
    put("chat_template", f"expr{i:02d}", src)
