"""Faithful PyTorch re-implementations of models that torchvision lacks (Debian ships no
`transformers`).  Parameter names, shapes, registration order and forward structure mirror
Hugging Face transformers, so DDP's parameter list and bucketing match the real models.

Callables for scripts/export_model.py:
  zoo.bert:bert_base   -- HF BertModel (bert-base-uncased config) with pooler, 109,482,240 params
  zoo.gpt2:gpt2        -- HF GPT2LMHeadModel (124M config), lm_head tied to wte, 124,439,808 params
  zoo.bert:bert_large  -- 24 layers, 1024 wide, 16 heads, FFN 4096: 335,141,888 params
  zoo.gpt2:gpt2_medium / gpt2_large / gpt2_xl -- 354,823,168 / 774,030,080 / 1,557,611,200 params
  zoo.llama:llama_7b   -- facebookresearch/llama LLaMA-7B decoder, 6,738,415,616 params (device=)
  zoo.mixed:mixed_gpt  -- small GPT, float32 embeddings/norms + bfloat16 linears
  zoo.unused:skip_branch_net -- MLP whose forward skips branch_b and aux_head (unused params)
(also importable as scripts.zoo.bert:bert_base / scripts.zoo.gpt2:gpt2 from the repo root)
"""
