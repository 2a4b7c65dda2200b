"""Faithful PyTorch re-implementations of models that torchvision lacks (Debian ships no
`transformers`).  Parameter names, shapes, registration order and forward structure mirror
Hugging Face transformers, so DDP's parameter list and bucketing match the real models.

Callables for scripts/export_model.py:
  zoo.bert:bert_base   -- HF BertModel (bert-base-uncased config) with pooler, 109,482,240 params
  zoo.gpt2:gpt2        -- HF GPT2LMHeadModel (124M config), lm_head tied to wte, 124,439,808 params
(also importable as scripts.zoo.bert:bert_base / scripts.zoo.gpt2:gpt2 from the repo root)
"""
