"""Tests of specexact.crossvocab: drafts over text between two vocabularies."""
