import torch
import torch.nn as nn

num_blocks = 4096
block_size = 16
num_kv_heads = 8
head_dim = 128
num_tokens = 8192


class Model(nn.Module):
    """key, value: [num_tokens, kv_heads, head_dim]; key_cache, value_cache:
    [num_blocks, block_size, kv_heads, head_dim] (updated in place); slot_mapping: [num_tokens] int64.

    Returns None: the two caches are the results.
    """

    def __init__(self):
        super().__init__()

    def forward(self, key, value, key_cache, value_cache, slot_mapping):
        heads, head_dim = key_cache.shape[2], key_cache.shape[3]
        key_cache.view(-1, heads, head_dim)[slot_mapping] = key
        value_cache.view(-1, heads, head_dim)[slot_mapping] = value


def get_inputs():
    key = torch.randn(num_tokens, num_kv_heads, head_dim)
    value = torch.randn(num_tokens, num_kv_heads, head_dim)
    key_cache = torch.randn(num_blocks, block_size, num_kv_heads, head_dim)
    value_cache = torch.randn(num_blocks, block_size, num_kv_heads, head_dim)
    slot_mapping = torch.randperm(num_blocks * block_size)[:num_tokens]
    return [key, value, key_cache, value_cache, slot_mapping]


def get_init_inputs():
    return []
