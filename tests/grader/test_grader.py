#!/usr/bin/env python3
"""Placeholder; replaced by the grader's self-test."""
import sys
sys.exit(0)
